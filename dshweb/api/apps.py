"""The JSON API (``/api/v1/``) and ``/metrics``."""

from __future__ import annotations

from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "dshweb.api"
    label = "api"
    verbose_name = "JSON API and metrics"
