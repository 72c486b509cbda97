from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dshweb.dashboard"
    label = "dashboard"
    verbose_name = "DSH dashboard"
