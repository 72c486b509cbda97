"""What the settings editor keeps: every save of a profile patch file.

DSH's files stay the truth; a revision records who changed one, when, and the whole
file before and after, so any earlier version can be shown as a diff and restored.

The table keeps its first name (``dashboard_patchrevision``): the model moved here
without touching data (:mod:`dshweb.profiles.migrations`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from dshweb.core.listing.homes import DEFAULT_HOME_NAME


class PatchRevision(models.Model):
    class Action(models.TextChoices):
        SAVE = "save", "saved"
        RESTORE = "restore", "restored"

    home = models.CharField(
        max_length=64, default=DEFAULT_HOME_NAME, help_text="The name of the DSH home."
    )
    profile = models.CharField(max_length=200)
    path = models.CharField(max_length=500, help_text="The patch file, relative to the DSH home.")
    section = models.CharField(max_length=100, help_text="The row the save changed.")
    action = models.CharField(max_length=10, choices=Action.choices, default=Action.SAVE)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    before = models.TextField(blank=True)
    after = models.TextField()
    restored_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="restores"
    )

    class Meta:
        db_table = "dashboard_patchrevision"
        ordering = ("-created_at", "-id")
        indexes = (models.Index(fields=("home", "profile", "-created_at")),)

    def __str__(self) -> str:
        return f"{self.path} {self.get_action_display()} {self.created_at:%Y-%m-%d %H:%M:%S}"
