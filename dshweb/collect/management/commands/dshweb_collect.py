"""``manage.py dshweb_collect --home DIR --name NAME``: collect one DSH home
(:mod:`dshweb.collect.collector`) until SIGTERM or SIGINT, which ask the stop of
:mod:`dshweb.live.stopping`: the process ends within seconds, whatever hangs.

Exit status 0 after a clean stop (lease released, or left to go stale when the database
cannot be reached then); 2, with the reason on one line, when
another live collector holds the home's name or path; 1 when the lease is lost while
running (another collector took it over after this one went unheard).
"""

from __future__ import annotations

import threading
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dshweb.collect.collector import run_collector
from dshweb.collect.lease import LeaseLost, LeaseRefused, lease_take
from dshweb.config import get_config
from dshweb.core.listing.homes import home_name_problem
from dshweb.live import timing
from dshweb.live.stopping import asking_on_signals, stopping


class Command(BaseCommand):
    help = (
        "Collect one DSH home: fold its sessions and keep them in the database and on the "
        "channel layer, for dashboards that read no home themselves."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--home", required=True, type=Path, help="The DSH home folder.")
        parser.add_argument("--name", required=True, help="The home's name on the dashboard.")
        parser.add_argument("--profile", default="", help="DSH profile (default: DSHWEB's).")
        parser.add_argument(
            "--heartbeat",
            type=float,
            default=timing.HEARTBEAT_EVERY,
            help=(
                "Seconds between lease renewals (default %(default)s); the lease is free "
                f"to take after {timing.STALE_AFTER_BEATS} missed ones."
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        home: Path = options["home"].expanduser().resolve()
        name: str = options["name"]
        heartbeat: float = options["heartbeat"]
        if (problem := home_name_problem(name)) is not None:
            raise CommandError(f"--name: {problem}")
        if not heartbeat > 0:
            raise CommandError("--heartbeat: give a number of seconds above 0")
        try:
            lease = lease_take(name=name, path=str(home), heartbeat_every=heartbeat)
        except LeaseRefused as refused:
            raise CommandError(str(refused), returncode=2) from refused
        stop = threading.Event()
        asking_on_signals(then=stop.set)
        self.stdout.write(f"dshweb_collect: collecting home {name} ({home})")
        try:
            released = run_collector(
                lease=lease,
                home=home,
                profile=options["profile"] or get_config().profile,
                stop=stop,
                on_ready=lambda line: self.stdout.write(f"dshweb_collect: {line}"),
            )
        except LeaseLost as lost:
            raise CommandError(str(lost), returncode=1) from lost
        if released:
            self.stdout.write(f"dshweb_collect: stopped; home {name} released")
        else:
            self.stdout.write(
                f"dshweb_collect: stopped; home {name} not released (the database is "
                "unavailable): its lease goes stale"
            )
        stopping.finished()  # its last work done: the process ends now, or is ended
