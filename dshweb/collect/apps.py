"""Collectors and web workers: leases, checkpoints, the sessions they fold."""

from __future__ import annotations

from django.apps import AppConfig


class CollectConfig(AppConfig):
    name = "dshweb.collect"
    label = "collect"
    verbose_name = "Collectors"

    def ready(self) -> None:
        from dshweb.collect.checkpoints import DatabaseCheckpoints
        from dshweb.live import service

        service.checkpoint_store = DatabaseCheckpoints
