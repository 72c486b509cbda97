"""``manage.py dsh_snapshot`` for ``call_command``; ``manage.py`` itself runs
:mod:`dshweb.cli.snapshot` without starting Django."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dshweb.cli import snapshot
from dshweb.config import get_config
from dshweb.live.service import own_home


class Command(BaseCommand):
    help = snapshot.HELP

    def add_arguments(self, parser: ArgumentParser) -> None:
        snapshot.add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            given = options["peak_windows"] or options["price_as"]
            book = (
                snapshot.rates(options["peak_windows"], options["price_as"])
                if given
                else get_config().rate_book
            )
            shots = snapshot.snapshots(
                home=options["home"] or own_home().path,
                profile=options["profile"] or get_config().profile,
                session=options["session"],
                at_seq=options["at_seq"],
                patches=options["patch"],
            )
        except snapshot.SnapshotError as error:
            raise CommandError(str(error)) from error
        snapshot.write(shots, self.stdout, as_json=options["json"], book=book)
