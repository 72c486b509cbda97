"""The Compact button: which ``dsh web`` to ask, and every request."""

from __future__ import annotations

from django.apps import AppConfig


class CompactionConfig(AppConfig):
    name = "dshweb.compaction"
    label = "compaction"
    verbose_name = "Compaction"

    def ready(self) -> None:
        from dshweb.collect.commands import register_command
        from dshweb.live.jobs import at_start
        from dshweb.live.protocol import COMPACT_RUN

        service = "dshweb.compaction.service"
        register_command(
            COMPACT_RUN, f"{service}.run_commanded_compaction", f"{service}.waiting_compactions"
        )
        at_start(f"{service}.close_abandoned_requests")
