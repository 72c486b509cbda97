from __future__ import annotations

from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "dshweb.live"
    label = "live"
    verbose_name = "DSH live folding"
