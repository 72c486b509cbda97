"""``measure()`` checked against the real engine's own decisions.

The host persists no ``measure()`` figure, but the fixtures were written under a known
point (a visible profile patch, or a ``--patch`` the manifest keeps), so every automatic
decision the real ``compaction-basic`` took is in the log. It checks before each step,
before ``step/start`` is appended: each first prune or automatic ``compaction/start``
of a pre-step happened with ``measure() ≥ threshold``, and every step that started
without an automatic compaction in its pre-step with ``measure() < threshold``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dshweb.core.fold.compaction import compaction_point, measured_tokens
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.log.home import session_logs
from dshweb.core.log.reader import LogTail
from dshweb.core.log.wire import (
    AnyEvent,
    CompactionEnd,
    CompactionPrune,
    CompactionStart,
    StepEnd,
    StepStart,
    TurnEnd,
    TurnStart,
)
from tests.conftest import FIXTURE_HOMES
from tests.support.inferred import hidden_points, hidden_sessions

HOMES = sorted(p for p in FIXTURE_HOMES.glob("*") if (p / "sessions").is_dir())
KNOWN_POINTS = {"patched-point": 12_000} | {
    home.name: truth for home, truth, _ in hidden_sessions()
}
"""Sessions run under a ``dsh --patch`` the home does not hold: the point it set."""
BY_WINDOW = hidden_points()
"""Sessions recorded with their point per window (one moves between two): the point of
the window in force at each decision (the last ``request/context``: the engine's first
check after a resume on another model still goes by the previous one)."""


def _decisions(log: Path) -> tuple[list[int], list[int], int | None]:
    """Measures at each fold the engine started, at each request it let pass, and the point
    (for a session that moved between windows: each measure less the point of the window
    it was decided under, plus the first window's point)."""
    index = HomeIndex(log.parents[3], profile="sdk")  # the session's own profile and preset
    index.refresh([log.parent])
    engine = index.settings_of(index.trackers[log.parent])[1].engine
    acted_at, passed = [], []
    meter = SessionMeter()
    in_step = acted = compacted = after_failure = False
    windows = BY_WINDOW.get(log.parent.name, {})
    first = next(iter(windows.values()), 0)

    def measured() -> int:
        if len(set(windows.values())) < 2:
            return measured_tokens(meter)
        return measured_tokens(meter) - windows.get(meter.context_window or 0, first) + first

    def on_event(event: AnyEvent) -> None:
        nonlocal in_step, acted, compacted, after_failure
        if isinstance(event, CompactionEnd) and event.data is not None:
            # A compaction that failed lets the next steps start at any measure.
            after_failure = event.data.error is not None
        elif isinstance(event, StepStart):
            if not (compacted or after_failure):
                passed.append(measured())
            in_step, acted, compacted = True, False, False
        elif isinstance(event, StepEnd | TurnStart | TurnEnd):
            in_step, acted, compacted = False, False, False
        elif isinstance(event, CompactionPrune) and not in_step:
            if not acted:
                acted_at.append(measured())
            acted = True
        elif isinstance(event, CompactionStart) and event.data is not None:
            after_failure = False
            if event.data.turn is not None and not in_step:  # not an overflow recovery
                if not acted:
                    acted_at.append(measured())
                acted = compacted = True
        meter.fold(event)

    LogTail(log, compressed=True).read(on_event, lambda: None)
    if meter.context_window is None or engine is None:
        return acted_at, passed, None
    point = compaction_point(
        context_window=meter.context_window, reserved=meter.reserved_tokens, engine=engine
    )
    return acted_at, passed, KNOWN_POINTS.get(log.parent.name, point.threshold_tokens)


LOGS = [log.path for home in HOMES for log in session_logs(home)]


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name[:20] for p in LOGS])
def test_measure_agrees_with_every_automatic_decision(log: Path) -> None:
    acted_at, passed, threshold = _decisions(log)
    assert threshold is not None
    assert all(m >= threshold for m in acted_at), (acted_at, threshold)
    assert all(m < threshold for m in passed), (max(passed), threshold)


def test_the_fixtures_hold_decisions_both_ways() -> None:
    compactions = sum(len(_decisions(log)[0]) for log in LOGS)
    assert compactions >= 5
    small = _decisions(session_logs(FIXTURE_HOMES / "auto-compact")[0].path)
    assert small[2] == 12_000
    assert max(small[1]) > 11_000, "some requests passed close under the point"
