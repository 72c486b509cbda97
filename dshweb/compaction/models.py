"""What the Compact button keeps: how dshweb reaches a ``dsh web``, and every request.

The tables keep their first names (``dashboard_…``): the models moved here without
touching data (:mod:`dshweb.compaction.migrations`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy

from dshweb.core.listing.homes import DEFAULT_HOME_NAME


class DshWebSetting(models.Model):
    """How dshweb reaches a ``dsh web`` for the Compact button (one row). The launch URL
    holds the DSH web token: it is stored here and never rendered back."""

    class Mode(models.TextChoices):
        OFF = "off", gettext_lazy("not configured")
        URL = "url", gettext_lazy("an existing dsh web (launch URL)")
        MANAGED = "managed", gettext_lazy("a dsh web started and supervised by dshweb")

    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.OFF)
    launch_url = models.CharField(max_length=500, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        db_table = "dashboard_dshwebsetting"

    def __str__(self) -> str:
        return f"dsh web: {self.get_mode_display()}"


class CompactionRequest(models.Model):
    """One press of the Compact button: who asked, when, and what DSH answered."""

    class State(models.TextChoices):
        REQUESTED = "requested"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    home = models.CharField(
        max_length=64, default=DEFAULT_HOME_NAME, help_text="The name of the session's home."
    )
    session_id = models.CharField(max_length=500)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.REQUESTED)
    outcome = models.CharField(max_length=30, blank=True)
    message = models.TextField(blank=True, help_text="The result line, or why it failed.")
    dsh_web_answer = models.TextField(blank=True, help_text="What dsh web answered (JSON).")
    seq_at_request = models.IntegerField(default=-1)
    projected_before = models.IntegerField(null=True, blank=True)
    owner = models.CharField(
        max_length=200,
        blank=True,
        help_text="The dshweb process running it (host:pid:start token); a request whose "
        "process is gone is closed with a reason.",
    )

    class Meta:
        db_table = "dashboard_compactionrequest"
        ordering = ("-requested_at", "-id")
        permissions = (("compact", "Can ask DSH to compact a session"),)
        indexes = (models.Index(fields=("home", "session_id", "-requested_at")),)

    def __str__(self) -> str:
        return f"compact {self.home}/{self.session_id} {self.state}"

    @property
    def in_flight(self) -> bool:
        return self.state in (self.State.REQUESTED, self.State.RUNNING)

    @property
    def duration_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.requested_at).total_seconds()
