"""``dshweb doctor`` (``manage.py dshweb_doctor``): what dshweb sees and what is wrong.

One line per part (data folder, database, Redis, DSH home, ``dsh``, profiles, engine):
``ok``, ``note`` (works, worth knowing) or ``problem``, what was found, and the fix.
Exit status 1 when a part has a problem.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dshweb.site.doctor import Status, findings
from dshweb.site.management.commands.dshweb_serve import show_home


class Command(BaseCommand):
    help = (
        "Say what dshweb sees (data, database, Redis, DSH home, dsh, profiles, engine) "
        "and what is wrong, with the fix."
    )
    requires_system_checks = ()  # it says itself what is wrong

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--home", type=Path, help="the DSH home to look at (default: $DSH_HOME, else ~/.dsh)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["home"] is not None:
            show_home(options["home"].expanduser().resolve())
        found = findings(home_option=options["home"] is not None)
        width = max(len(f.part) for f in found)
        for finding in found:
            line = f"{finding.status:<8} {finding.part:<{width}}  {finding.seen}"
            if finding.fix:
                line += f"\n{'':<8} {'':<{width}}  → {finding.fix}"
            self.stdout.write(line)
        problems = sum(f.status is Status.PROBLEM for f in found)
        if problems:
            raise CommandError(f"{problems} problem(s) found", returncode=1)
