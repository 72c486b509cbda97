"""Alert rules, their watcher, firings and deliveries."""

from __future__ import annotations

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "dshweb.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        from dshweb.live.jobs import at_start, beside_hub

        beside_hub("dshweb.alerts.watcher.watching")
        at_start("dshweb.alerts.demo.give_demo_rules")
