"""Collectors and web workers: leases, checkpoints, the sessions they fold."""

from __future__ import annotations

from django.apps import AppConfig


class CollectConfig(AppConfig):
    name = "dshweb.collect"
    label = "collect"
    verbose_name = "Collectors"

    def ready(self) -> None:
        from dshweb.live.jobs import keep_checkpoints_in

        keep_checkpoints_in("dshweb.collect.checkpoints.DatabaseCheckpoints")
