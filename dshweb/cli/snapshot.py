"""``manage.py dsh_snapshot``: every session's projections, as the host computes them.

It needs nothing of Django, so ``manage.py`` runs it without starting Django (it starts
in a fraction of a second); the management command of the same name wraps it for
``call_command``. With ``--session`` only that session's folder is read.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from dshweb import environment
from dshweb.cli import SNAPSHOT_HELP
from dshweb.core.errors import DshError
from dshweb.core.fold.cost import REGISTRY_RATES, RateBook, rate_book, usd_text
from dshweb.core.fold.cost_settings import DEFAULT_PRICE_AS, NO_ALIASES
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.progress import ProgressCounter
from dshweb.core.log.home import LogFile, encode_segment, session_logs

if TYPE_CHECKING:
    from dshweb.core.fold.session import SessionSnapshot

HELP = SNAPSHOT_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument(
        "--peak-windows",
        default=environment.peak_windows(),
        help="UTC peak billing windows for the cost, 01:00-04:00,06:00-10:00 "
        "(default: $DSHWEB_PEAK_WINDOWS, else the dsh-llm-cost registry's)",
    )
    parser.add_argument(
        "--price-as",
        default=environment.rate_as(),
        help="price models the registry does not know as one it does, "
        f"model=registry-model,… or {NO_ALIASES} (default: $DSHWEB_PRICE_AS, else "
        f"{DEFAULT_PRICE_AS}: DSH's own model)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show how far the read has got on stderr (default: when it is a terminal)",
    )


class SnapshotError(Exception):
    """A one-line reason the command cannot answer (it exits 1)."""


def rates(peak_windows: str, rate_as: str) -> RateBook:
    """``--peak-windows`` and ``--price-as`` read (:class:`SnapshotError` when wrong)."""
    try:
        return rate_book(peak_windows, rate_as, ("--peak-windows", "--price-as"))
    except ValueError as exc:
        raise SnapshotError(str(exc)) from None


def session_folders(home: Path, session_id: str) -> list[Path]:
    """The folders that can hold ``session_id`` (one per project folder that has it)."""
    name = encode_segment(session_id)
    root = home / "sessions"
    try:
        projects = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    return [p / name for p in projects if (p / name).is_dir()]


def snapshots(
    *,
    home: Path,
    profile: str,
    session: str | None = None,
    at_seq: int | None = None,
    patches: Sequence[Path] = (),
    progress: TextIO | None = None,
) -> list[SessionSnapshot]:
    index = HomeIndex(
        home.expanduser(), profile=profile, stop_after_seq=at_seq, extra_patches=tuple(patches)
    )
    try:
        if session is not None:
            index.refresh(session_folders(index.home, session))
        elif progress is None:
            index.refresh()
        else:
            _refresh_showing_progress(index, progress)
    except DshError as error:
        raise SnapshotError(str(error)) from error
    shots = index.snapshots()
    if session is not None:
        shots = [s for s in shots if s.session_id == session]
        if not shots:
            raise SnapshotError(f"no session {session!r} in {home}")
    return shots


def _refresh_showing_progress(index: HomeIndex, out: TextIO) -> None:
    """Fold the whole home, rewriting one line on ``out`` at most 4 times a second."""
    counter = ProgressCounter(session_logs(index.home) if index.home.is_dir() else [], {})
    shown = time.monotonic()

    def on_folded(folder: Path, log: LogFile) -> None:
        nonlocal shown
        tracker = index.trackers.get(folder)
        counter.folded(folder, tracker.tail.offset if tracker is not None else 0)
        if time.monotonic() - shown >= 0.25:
            shown = time.monotonic()
            out.write(f"\r{counter.now().line()}\033[K")
            out.flush()

    index.refresh(on_folded=on_folded)
    out.write(f"\r{counter.now(done=True).line()}\033[K\n")
    out.flush()


class Out(Protocol):
    def write(self, text: str, /) -> object: ...


def write(
    shots: list[SessionSnapshot], out: Out, *, as_json: bool, book: RateBook = REGISTRY_RATES
) -> None:
    if as_json:
        now_ms = int(time.time() * 1000)
        listed = [s.as_json(now_ms, book) | context_gauge(s).as_json() for s in shots]
        out.write(json.dumps(listed, ensure_ascii=False, indent=2) + "\n")
        return
    for shot in shots:
        out.write("\t".join(text_fields(shot, book)) + "\n")


def text_fields(shot: SessionSnapshot, book: RateBook) -> list[str]:
    """One session as the text output gives it: id, live or idle, used/window tokens and
    percent, band, compaction point, cost, events (and errors, and the bytes past the last
    whole event); ``-`` where not known."""
    gauge = context_gauge(shot)
    total, unrated = book.total(shot.cost)
    cost = "cost unknown" if total is None else usd_text(total)
    if total is not None and unrated:
        cost += " + unpriced"
    fields = [
        shot.session_id,
        "live" if shot.live else "idle",
        f"{gauge.used}/{gauge.window}" if gauge.used is not None and gauge.window else "-",
        "-" if gauge.percent is None else f"{gauge.percent}% of window",
        gauge.band.value,
        "point -" if gauge.threshold is None else f"point {gauge.threshold}",
        cost,
        f"{shot.events} events",
    ]
    if shot.errors:
        fields.append(f"ERROR: {'; '.join(shot.errors)}")
    if shot.tail_bytes:
        state = "being written" if shot.live else "torn"
        fields.append(f"{shot.tail_bytes} bytes after event {shot.last_seq} {state}")
    return fields


def main(
    argv: Sequence[str],
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    *,
    prog: str = "manage.py dsh_snapshot",
) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=HELP)
    add_arguments(parser)
    options = parser.parse_args(argv)

    home = options.home
    if home is None:
        configured = environment.configured_home()
        choice = environment.home_choice(
            configured, demo=environment.demo_allowed(), data_dir=environment.data_dir()
        )
        home = choice.path
        if choice.is_demo:
            err.write(environment.demo_notice(configured) + "\n")
    try:
        book = rates(options.peak_windows, options.price_as)
        shots = snapshots(
            home=home,
            profile=options.profile or environment.profile(),
            session=options.session,
            at_seq=options.at_seq,
            patches=options.patch,
            progress=err
            if (options.progress or (options.progress is None and err.isatty()))
            else None,
        )
    except SnapshotError as error:
        err.write(f"CommandError: {error}\n")
        return 1
    write(shots, out, as_json=options.json, book=book)
    return 0
