"""``manage.py dsh_snapshot``: every session's projections, as the host computes them."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from dshweb.core.errors import DshError
from dshweb.core.index import HomeIndex


class Command(BaseCommand):
    help = "Print the token usage, context pressure and breakdown of DSH sessions."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--home", type=Path, help="DSH home (default: the dashboard's)")
        parser.add_argument("--session", help="only this session id")
        parser.add_argument("--at-seq", type=int, help="fold only events with seq <= N")
        parser.add_argument("--profile", help="profile whose compaction settings apply")
        parser.add_argument(
            "--patch",
            type=Path,
            action="append",
            default=[],
            help="extra patch file applied last, like dsh --patch (repeatable)",
        )
        parser.add_argument("--json", action="store_true", help="print a JSON array")

    def handle(self, *args: Any, **options: Any) -> None:
        home: Path = options["home"] or settings.DSH_HOME
        index = HomeIndex(
            home.expanduser(),
            profile=options["profile"] or settings.DSH_PROFILE,
            stop_after_seq=options["at_seq"],
            extra_patches=tuple(options["patch"]),
        )
        try:
            index.refresh()
        except DshError as error:
            raise CommandError(str(error)) from error
        shots = index.snapshots()
        if options["session"] is not None:
            shots = [s for s in shots if s.session_id == options["session"]]
            if not shots:
                raise CommandError(f"no session {options['session']!r} in {home}")
        if options["json"]:
            payload = [s.as_json() for s in shots]
            self.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2))
            return
        for shot in shots:
            used = shot.used_tokens
            window = shot.context_pressure.get("contextWindow")
            gauge = f"{used}/{window}" if used is not None and window else "-"
            problems = f"  ERROR: {'; '.join(shot.errors)}" if shot.errors else ""
            self.stdout.write(
                f"{shot.session_id}\t{'live' if shot.live else 'idle'}\t{gauge}\t"
                f"{shot.events} events{problems}"
            )
