"""Admin: the alert rules; their firings and deliveries, read-only."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule


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
