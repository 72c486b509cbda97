"""``manage.py dshweb_export_otlp --home DIR [--since DATE]`` (``dshweb export-otlp``):
send a home's whole history to an OpenTelemetry collector once
(:mod:`dshweb.otlp.backfill`), where ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the signals' own
variables) says, whether or not the live export is on.

Exit status 0 once everything was sent; 1, with what was sent and the collector's
answer, when it did not take a request (run it again: the same data is sent again, and a
backend keeps it once); 2 for an option it cannot use.
"""

from __future__ import annotations

from argparse import ArgumentParser
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dshweb.config import get_config
from dshweb.core.errors import DshError
from dshweb.core.listing.homes import home_name_problem
from dshweb.installed import add_extra
from dshweb.otlp.backfill import Report, Stopped, backfill
from dshweb.otlp.send import EXTRA, Sender, exporters_installed


def since_ms(text: str) -> int:
    """``--since``: a date (``2026-05-01``, midnight UTC) or a time (``2026-05-01T12:30``,
    UTC unless it names its offset), in epoch milliseconds."""
    try:
        found = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CommandError(
            f"--since: {text!r} is not a date (2026-05-01) or a time (2026-05-01T12:30)",
            returncode=2,
        ) from None
    if found.tzinfo is None:
        found = found.replace(tzinfo=UTC)
    return int(found.timestamp() * 1000)


class Command(BaseCommand):
    help = (
        "Send a DSH home's whole history (its sessions' metrics, with their events' own "
        "times, and a span per compaction) to an OpenTelemetry collector, once; sending it "
        "again sends the same data."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--home", required=True, type=Path, help="The DSH home folder.")
        parser.add_argument(
            "--since",
            help="Only what happened from this date or time on (UTC unless it says), e.g. "
            f"{date(2026, 5, 1).isoformat()}",
        )
        parser.add_argument(
            "--name",
            default="",
            help="The home's name on the dashboard (default: DSHWEB_HOME_NAME's): "
            "what the series and the traces are named by.",
        )
        parser.add_argument("--profile", default="", help="DSH profile (default: DSHWEB's).")

    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()
        home: Path = options["home"].expanduser().resolve()
        name: str = options["name"] or config.home_name
        if (problem := home_name_problem(name)) is not None:
            raise CommandError(f"--name: {problem}", returncode=2)
        since = since_ms(options["since"]) if options["since"] else None
        target = config.otlp
        if target.protocol_problem:
            raise CommandError(target.protocol_problem, returncode=2)
        if not exporters_installed():
            raise CommandError(
                f"the OpenTelemetry exporters are not installed: {add_extra(EXTRA)}",
                returncode=2,
            )
        self.stdout.write(
            f"export-otlp: home {name} ({home}) to {target.metrics_url} and {target.traces_url}"
        )
        sender = Sender(target)
        try:
            report = backfill(
                home,
                name=name,
                profile=options["profile"] or config.profile,
                sender=sender,
                book=config.rate_book,
                since_ms=since,
            )
        except DshError as error:
            raise CommandError(f"--home: {error}", returncode=2) from None
        except Stopped as stopped:
            raise CommandError(
                f"{_sent(stopped.report)} before the collector refused: {stopped}; "
                "run it again once it answers (what was sent is sent again, the same)",
                returncode=1,
            ) from None
        finally:
            sender.close()
        self.stdout.write(f"export-otlp: {_sent(report)}")


def _sent(report: Report) -> str:
    return (
        f"{report.sessions} session(s) read, {report.points} data point(s) and "
        f"{report.spans} span(s) sent"
    )
