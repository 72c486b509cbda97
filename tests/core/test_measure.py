"""``measure()`` checked against the real engine's own decisions.

The host persists no ``measure()`` figure, but the fixtures were written under a
visible profile patch (threshold 12,000 tokens), so every automatic decision the real
``compaction-basic`` took is in the log: each automatic ``compaction/start`` and each
first prune of a step happened with ``measure() ≥ threshold``, and every model request
made without compacting happened with ``measure() < threshold``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dshweb.core.fold.compaction import compaction_point, measured_tokens
from dshweb.core.fold.ledger import refused_as_too_large
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.log.home import session_logs
from dshweb.core.log.reader import LogTail
from dshweb.core.log.wire import (
    AnyEvent,
    AssistantAttempt,
    AssistantMessage,
    CompactionEnd,
    CompactionPrune,
    CompactionStart,
    StepStart,
)
from dshweb.core.profile.effective import EngineConfig
from dshweb.core.profile.layers import engine_config
from tests.conftest import FIXTURE_HOMES

HOMES = sorted(p for p in FIXTURE_HOMES.glob("*") if (p / "sessions").is_dir())
KNOWN_POINTS = {"patched-point": 12_000}
"""Sessions run under a ``dsh --patch`` the home does not hold: the point it set."""


def _decisions(log: Path) -> tuple[list[int], list[int], int | None]:
    """Measures at each fold the engine started, at each request it let pass, and the point."""
    engine = EngineConfig.from_config(engine_config(log.parents[3], "sdk"))
    folded, passed = [], []
    meter = SessionMeter()
    pruned_in_step = refused_in_step = after_failure = False

    def on_event(event: AnyEvent) -> None:
        nonlocal pruned_in_step, refused_in_step, after_failure
        if isinstance(event, CompactionStart):
            after_failure = False
        elif isinstance(event, CompactionEnd) and event.data is not None:
            # A compaction that failed lets the next requests out at any measure.
            after_failure = event.data.error is not None
        if isinstance(event, StepStart):
            pruned_in_step = refused_in_step = False
        elif isinstance(event, AssistantAttempt) and refused_as_too_large(event.data):
            refused_in_step = True  # the compaction that follows is the overflow's
        elif isinstance(event, CompactionPrune) and not pruned_in_step:
            pruned_in_step = True
            folded.append(measured_tokens(meter))
        elif (
            isinstance(event, CompactionStart)
            and event.data is not None
            and event.data.turn is not None
            and not pruned_in_step
            and not refused_in_step
        ):
            folded.append(measured_tokens(meter))
        elif isinstance(event, AssistantMessage) and not after_failure:
            passed.append(measured_tokens(meter))
        meter.fold(event)

    LogTail(log, compressed=True).read(on_event, lambda: None)
    if meter.context_window is None:
        return folded, passed, None
    point = compaction_point(
        context_window=meter.context_window, reserved=meter.reserved_tokens, engine=engine
    )
    return folded, passed, KNOWN_POINTS.get(log.parent.name, point.threshold_tokens)


LOGS = [log.path for home in HOMES for log in session_logs(home)]


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name[:20] for p in LOGS])
def test_measure_agrees_with_every_automatic_decision(log: Path) -> None:
    folded, passed, threshold = _decisions(log)
    assert threshold is not None
    assert all(m >= threshold for m in folded), (folded, threshold)
    assert all(m < threshold for m in passed), (max(passed), threshold)


def test_the_fixtures_hold_decisions_both_ways() -> None:
    folds = sum(len(_decisions(log)[0]) for log in LOGS)
    assert folds >= 5
    small = _decisions(session_logs(FIXTURE_HOMES / "auto-compact")[0].path)
    assert small[2] == 12_000
    assert max(small[1]) > 11_000, "some requests passed close under the point"
