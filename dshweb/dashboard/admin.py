"""Admin: the record of every patch file save and Compact press, and the alerts: read-only
where it is a record."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from dshweb.dashboard.models import CompactionRequest, PatchRevision
from dshweb.live.models import AlertDelivery, AlertFiring, AlertRule


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


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin[AlertRule]):
    """Every user's alert rules; the webhook secret is neither shown nor edited here."""

    list_display = ("name", "owner", "condition", "scope", "enabled", "cooldown_seconds")
    list_filter = ("condition", "enabled", "scope")
    search_fields = ("name", "owner__username")
    exclude = ("webhook_secret",)


class AlertDeliveryInline(admin.TabularInline[AlertDelivery, AlertFiring]):
    model = AlertDelivery
    fields = ("channel", "state", "attempts", "next_attempt_at", "sent_at", "last_error")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: AlertFiring | None = None) -> bool:
        return False


@admin.register(AlertFiring)
class AlertFiringAdmin(admin.ModelAdmin[AlertFiring]):
    """What fired, and how each delivery went (attempts, last error): read-only."""

    list_display = ("fired_at", "rule", "home", "session_id", "summary", "cleared_at")
    list_filter = ("rule__condition", "home")
    search_fields = ("session_id", "title", "rule__name")
    readonly_fields = (
        "rule",
        "home",
        "session_id",
        "title",
        "key",
        "summary",
        "fired_at",
        "cleared_at",
    )
    inlines = (AlertDeliveryInline,)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AlertFiring | None = None) -> bool:
        return False
