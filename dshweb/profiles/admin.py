"""Admin: the record of every patch file save, read-only."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from dshweb.profiles.models import PatchRevision


@admin.register(PatchRevision)
class PatchRevisionAdmin(admin.ModelAdmin[PatchRevision]):
    list_display = ("created_at", "profile", "path", "section", "action", "user")
    list_filter = ("profile", "section", "action")
    readonly_fields = (
        "profile",
        "path",
        "section",
        "action",
        "user",
        "created_at",
        "before",
        "after",
        "restored_from",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: PatchRevision | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: PatchRevision | None = None) -> bool:
        return False
