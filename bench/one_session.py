"""What the single-session benchmarks share: the largest session of a home, read whole,
and medians in microseconds (bench/compaction_preview.py, bench/cost.py)."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from dshweb.core.log.home import LogFile, session_logs
from dshweb.core.log.wire import AnyEvent
from tests.support.inferred import events_of

REPO = Path(__file__).resolve().parent.parent
LARGEST_FIXTURE = REPO / "tests" / "fixtures" / "homes" / "prune-heavy"
"""The fixture session with the most events and folds, written by the real DSH runtime."""


def largest_session(
    description: str, *, minimum: int
) -> tuple[Path, LogFile, list[AnyEvent]] | None:
    """The home named on the command line (default :data:`LARGEST_FIXTURE`), its largest
    session and that session's events; ``None`` (said on stderr) when it has fewer than
    ``minimum``: a benchmark that would do less than it says."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("home", nargs="?", type=Path, default=LARGEST_FIXTURE)
    home = parser.parse_args().home
    (log, *_) = sorted(session_logs(home), key=lambda log: -log.path.stat().st_size)
    events = events_of(log)
    if len(events) < minimum:
        name = Path(sys.argv[0]).stem
        print(f"{name}: only {len(events)} events (< {minimum})", file=sys.stderr)
        return None
    return home, log, events


def median_us(seconds: list[float]) -> float:
    """The median of ``seconds``, in microseconds."""
    return statistics.median(seconds) * 1e6
