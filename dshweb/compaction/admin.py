"""Admin: the record of every Compact press, read-only."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from dshweb.compaction.models import CompactionRequest


@admin.register(CompactionRequest)
class CompactionRequestAdmin(admin.ModelAdmin[CompactionRequest]):
    """The audit of every Compact button press: read-only."""

    list_display = ("requested_at", "session_id", "user", "state", "outcome", "duration")
    list_filter = ("state", "outcome")
    search_fields = ("session_id",)
    readonly_fields = (
        "session_id",
        "user",
        "requested_at",
        "finished_at",
        "state",
        "outcome",
        "message",
        "dsh_web_answer",
        "seq_at_request",
        "projected_before",
    )

    @admin.display(description="seconds")
    def duration(self, obj: CompactionRequest) -> str:
        seconds = obj.duration_seconds
        return "" if seconds is None else f"{seconds:.1f}"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: CompactionRequest | None = None
    ) -> bool:
        return False

    def has_delete_permission(
        self, request: HttpRequest, obj: CompactionRequest | None = None
    ) -> bool:
        return False
