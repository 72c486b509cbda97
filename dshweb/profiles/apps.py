"""The settings editor of DSH profiles' patch files."""

from __future__ import annotations

from django.apps import AppConfig


class ProfilesConfig(AppConfig):
    name = "dshweb.profiles"
    label = "profiles"
    verbose_name = "Profile settings"

    def ready(self) -> None:
        from dshweb.collect.commands import register_command
        from dshweb.live.protocol import SETTINGS_REQUEST

        register_command(SETTINGS_REQUEST, "dshweb.profiles.remote.run_settings_request")
