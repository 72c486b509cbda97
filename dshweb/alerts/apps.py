"""Alert rules, their watcher, firings and deliveries."""

from __future__ import annotations

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "dshweb.alerts"
    label = "alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        from dshweb.alerts.demo import give_demo_rules
        from dshweb.alerts.watcher import watching
        from dshweb.live.startup import at_start, beside_hub

        beside_hub(watching)
        at_start(give_demo_rules)
