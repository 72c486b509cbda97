"""The sessions list, a session's page, its sockets and exports."""

from __future__ import annotations

from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "dshweb.sessions"
    label = "dshweb_sessions"
    verbose_name = "Sessions"
