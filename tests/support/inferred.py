"""Walk a real log event by event and judge the compaction point dshweb infers from it
against the true one (``tests/core/fold/test_inferred_point.py``, ``bench/inferred_point.py``).

The fixture sessions ``hidden-*`` ran under a point drawn at random when they were made
and given only as ``dsh --patch`` (``tests/fixtures/scenarios.py``: ``run_hidden``); the
manifest keeps it. Sessions whose profile gives the point (12,000 under the small
window) are judged too, as if it were hidden.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dshweb.core.fold.compaction import measured_tokens
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.fold.pace import PaceCollector
from dshweb.core.fold.point import InferredPoint
from dshweb.core.log.home import LogFile, session_logs
from dshweb.core.log.reader import LogTail
from dshweb.core.log.wire import AnyEvent, StepStart

FIXTURE_HOMES = Path(__file__).resolve().parents[1] / "fixtures" / "homes"
COMPACTIONS_BEFORE_NARROW = 5
"""Automatic folds after which the range must be narrow."""
NARROW = 0.01
"""How narrow: this share of the point."""
KNOWN_POINTS = {
    name: 12_000
    for name in (
        "auto-compact",
        "pace-steady",
        "pace-mixed",
        "pace-slow-fast",
        "patched-point",
        "demo-live",
        "fold-failures",
        "told-truth",
        "told-unmirrored",
    )
}
"""Fixture sessions whose point is the small window's (their shapes: steady, uneven and
changing paces, prunes, a failed compaction and an overflow recovery, dsh-context-truth
installed with and without the engine's point mirrored)."""


@dataclass(frozen=True, slots=True)
class Judged:
    session: str
    shape: str
    truth: int
    events: int
    decisions: int
    compactions: int
    """Automatic folds the engine decided by the point (a pre-step's prunes and
    compaction are one)."""
    misses: tuple[tuple[int, InferredPoint], ...]
    """Every (seq, range) along the log that did not hold the point (at most a few)."""
    widest_after: int | None
    """The widest range once :data:`COMPACTIONS_BEFORE_NARROW` folds had happened (``None``:
    fewer folds)."""
    final: InferredPoint
    crossing: int | None
    """The smallest step that crossed the point among the first
    :data:`COMPACTIONS_BEFORE_NARROW` fold decisions: a fold's measure minus that of the step
    let out before it. No range can be narrower than the log allows: the range after
    them is at most this wide."""

    @property
    def held(self) -> bool:
        return not self.misses

    @property
    def narrow(self) -> bool | None:
        if self.widest_after is None:
            return None
        return self.widest_after <= NARROW * self.truth


def events_of(log: LogFile) -> list[AnyEvent]:
    events: list[AnyEvent] = []
    LogTail(log.path, log.compressed).read(events.append, lambda: events.clear())
    return events


def judge(log: LogFile, truth: int, shape: str, points: Mapping[int, int] | None = None) -> Judged:
    """Fold ``log`` as the dashboard does and check the inferred range after every event
    (``points``: the true point by window, for a session that moved between windows; the
    range is judged against the point of the window its decisions were made under)."""
    meter, pace = SessionMeter(), PaceCollector()
    misses: list[tuple[int, InferredPoint]] = []
    widest: int | None = None
    last_passed: int | None = None
    crossings: list[int] = []
    compactions = 0
    events = events_of(log)
    for event in events:
        decided = pace.decisions.count
        reading = measured_tokens(meter)
        pace.observe(event, meter)
        if pace.decisions.count != decided:
            if type(event) is StepStart:
                last_passed = reading
            else:
                compactions += 1
                if last_passed is not None:
                    crossings.append(reading - last_passed)
        meter.fold(event)
        inferred = pace.decisions.inferred
        basis = pace.decisions.basis
        now = (points or {}).get(basis.window or 0, truth) if basis is not None else truth
        if not inferred.holds(now) and len(misses) < 5:
            misses.append((event.seq if event.seq is not None else -1, inferred))
        if compactions >= COMPACTIONS_BEFORE_NARROW:
            low, high = inferred.low, inferred.high
            width = high - low if low is not None and high is not None else truth
            widest = width if widest is None else max(widest, width)
    return Judged(
        session=log.session_dir.name,
        shape=shape,
        truth=truth,
        events=len(events),
        decisions=pace.decisions.count,
        compactions=compactions,
        misses=tuple(misses),
        widest_after=widest,
        final=pace.decisions.inferred,
        crossing=min(crossings[:COMPACTIONS_BEFORE_NARROW], default=None),
    )


def hidden_sessions(homes: Path = FIXTURE_HOMES) -> list[tuple[Path, int, str]]:
    """``(home, true point, shape)`` of every fixture session under a hidden point."""
    manifest: dict[str, Any] = json.loads((homes / "MANIFEST.json").read_text("utf-8"))
    return [
        (homes / name, int(entry["hidden"]["thresholdTokens"]), str(entry["hidden"]["shape"]))
        for name, entry in manifest.items()
        if "hidden" in entry and (homes / name).is_dir()
    ]


def hidden_points(homes: Path = FIXTURE_HOMES) -> dict[str, dict[int, int]]:
    """The true point by window of each session the manifest records per window
    (``hidden.windows``: the shaped sessions of ``tests/fixtures/scenarios.py``)."""
    manifest: dict[str, Any] = json.loads((homes / "MANIFEST.json").read_text("utf-8"))
    return {
        name: {int(w["contextWindow"]): int(w["thresholdTokens"]) for w in windows}
        for name, entry in manifest.items()
        if (windows := entry.get("hidden", {}).get("windows"))
    }


def judged_homes(homes: Path = FIXTURE_HOMES) -> list[Judged]:
    """Every hidden-point session and every session of :data:`KNOWN_POINTS`, judged."""
    chosen = hidden_sessions(homes) + [
        (homes / name, point, "small window, point in the profile")
        for name, point in KNOWN_POINTS.items()
    ]
    points = hidden_points(homes)
    judged = []
    for home, truth, shape in chosen:
        for log in session_logs(home):
            if log.session_dir.name == home.name:
                judged.append(judge(log, truth, shape, points.get(home.name)))
    return judged
