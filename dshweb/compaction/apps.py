"""The Compact button: which ``dsh web`` to ask, and every request."""

from __future__ import annotations

from django.apps import AppConfig


class CompactionConfig(AppConfig):
    name = "dshweb.compaction"
    label = "compaction"
    verbose_name = "Compaction"

    def ready(self) -> None:
        from dshweb.collect.commands import register_command
        from dshweb.compaction.service import (
            close_abandoned_requests,
            run_commanded_compaction,
            waiting_compactions,
        )
        from dshweb.live.protocol import COMPACT_RUN
        from dshweb.live.startup import at_start

        register_command(COMPACT_RUN, run_commanded_compaction, waiting_compactions)
        at_start(close_abandoned_requests)
