"""The bundled demo home and its replayed session."""

from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "dshweb.demo"
    label = "demo"
    verbose_name = "Demo"
