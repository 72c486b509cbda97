"""The OpenTelemetry export."""

from __future__ import annotations

from django.apps import AppConfig


class OtlpConfig(AppConfig):
    name = "dshweb.otlp"
    label = "otlp"
    verbose_name = "OpenTelemetry export"

    def ready(self) -> None:
        from dshweb.live.jobs import beside_hub

        beside_hub("dshweb.otlp.live.exporting")
