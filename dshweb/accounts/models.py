"""What an account keeps besides Django's user: its personal API tokens.

The table keeps its first name (``dashboard_apitoken``): the model moved here without
touching data (:mod:`dshweb.accounts.migrations`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A personal token for the JSON API (``Authorization: Bearer dshweb_…``): made and
    revoked by its user in the browser, shown once; only its SHA-256 is kept."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, to tell it.")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "dashboard_apitoken"
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def active(self) -> bool:
        return self.revoked_at is None
