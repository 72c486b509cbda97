"""The compaction point the engine's decisions allow (dshweb.core.fold.pace.Decisions)
holds the true one on every log, all the way along, and narrows as folds come.

The ``hidden-*`` fixture sessions ran under points drawn at random when they were made
and given only as ``dsh --patch`` (several windows; the pruner on and off; results big
enough to prune every few steps; the sdk profile and two web presets); the others under
the small window's 12,000 from their profile (``tests/support/inferred.py``).
"""

from __future__ import annotations

import pytest

from dshweb.core.fold.point import InferredPoint
from dshweb.core.log.home import session_logs
from dshweb.core.log.wire import RequestContext, RequestHeader
from tests.support.inferred import (
    COMPACTIONS_BEFORE_NARROW,
    FIXTURE_HOMES,
    NARROW,
    Judged,
    events_of,
    hidden_sessions,
    judged_homes,
)
from tests.support.snapshots import fixture_snapshot

JUDGED = judged_homes()


def test_there_are_enough_hidden_points_of_enough_shapes() -> None:
    hidden = hidden_sessions()
    assert len(hidden) >= 12
    assert len({shape for _, _, shape in hidden}) >= 5
    assert len({truth for _, truth, _ in hidden}) == len(hidden)  # drawn, not one point


@pytest.mark.parametrize("judged", JUDGED, ids=lambda j: j.session)
def test_the_range_holds_the_true_point_after_every_event(judged: Judged) -> None:
    assert judged.decisions > 0 and judged.compactions >= 1
    assert judged.held, f"{judged.session}: point {judged.truth}, ranges {judged.misses}"
    assert judged.final.low is not None and judged.final.high is not None


@pytest.mark.parametrize(
    "judged", [j for j in JUDGED if j.session.startswith("hidden-")], ids=lambda j: j.session
)
def test_the_range_is_as_narrow_as_the_log_allows_once_five_compactions_have_happened(
    judged: Judged,
) -> None:
    # Within 1% of the point, unless every one of the first five folds came at a step
    # that crossed the point by more (the engine's decisions then say no more: bench/
    # inferred_point.py prints which); never wider than the smallest such step.
    assert judged.compactions >= COMPACTIONS_BEFORE_NARROW
    assert judged.widest_after is not None and judged.crossing is not None
    allowed = max(NARROW * judged.truth, judged.crossing - 1)
    assert judged.widest_after <= allowed, (
        f"{judged.session}: widest {judged.widest_after} after {COMPACTIONS_BEFORE_NARROW} folds; "
        f"{NARROW:.0%} of {judged.truth} is {NARROW * judged.truth:.0f}, the smallest "
        f"crossing step {judged.crossing}"
    )


def test_most_hidden_points_are_within_one_percent_after_five_compactions() -> None:
    hidden = [j for j in JUDGED if j.session.startswith("hidden-")]
    narrow = [j for j in hidden if j.narrow]
    assert len(narrow) >= 9, [(j.session, j.widest_after, j.crossing) for j in hidden]


def test_a_step_started_is_read_before_its_own_messages() -> None:
    # The engine checks before step/start, so the step's runtime-context snapshot is not
    # in what it compared: a range read after it would lie above the point.
    from dshweb.core.fold.compaction import measured_tokens
    from dshweb.core.fold.meter import SessionMeter
    from dshweb.core.fold.pace import PaceCollector
    from dshweb.core.log.home import session_logs
    from dshweb.core.log.wire import StepStart
    from tests.support.inferred import FIXTURE_HOMES, events_of

    (log,) = session_logs(FIXTURE_HOMES / "pace-steady")
    meter, pace = SessionMeter(), PaceCollector()
    before_steps = []
    for event in events_of(log):
        if type(event) is StepStart:
            before_steps.append(measured_tokens(meter))
        pace.observe(event, meter)
        meter.fold(event)
    passed = pace.decisions.passed
    assert passed is not None and passed in before_steps
    assert passed < 12_000 <= (pace.decisions.acted or 0)
    assert isinstance(pace.decisions.inferred, InferredPoint)


def test_each_event_decides_as_the_engines_check_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # A pre-step's first prune is one decision at or past the point; its compaction is the
    # same decision; the step it then lets out (the engine may have given up above the
    # point) decides nothing; a step let out otherwise was below it; a compaction inside
    # a step (an overflow recovery) comes at any measure.
    import dshweb.core.fold.point as point
    from dshweb.core.fold.meter import SessionMeter
    from tests.support.logbuilder import event, typed

    reading = {"now": 0}
    monkeypatch.setattr(point, "measured_tokens", lambda meter: reading["now"])
    decisions, meter = point.Decisions(), SessionMeter()
    script = [
        (100, event(1, "step/start", turn=1, step=1)),
        (100, event(2, "step/end", turn=1, step=1)),
        (150, event(3, "compaction/prune")),
        (140, event(4, "compaction/start", turn=1, compactionId="a")),
        (130, event(5, "compaction/end", turn=1, compactionId="a")),
        (160, event(6, "step/start", turn=1, step=2)),
        (160, event(7, "step/end", turn=1, step=2)),
        (120, event(8, "step/start", turn=1, step=3)),
        (90, event(9, "compaction/start", turn=1, compactionId="b")),
        (80, event(10, "compaction/end", turn=1, compactionId="b")),
        (80, event(11, "step/end", turn=1, step=3)),
    ]
    for now, record in script:
        reading["now"] = now
        decisions.observe(typed(record), meter)
    assert decisions.inferred == InferredPoint(low=121, high=150, decisions=3)


def test_a_session_back_on_a_model_finds_what_its_decisions_there_showed() -> None:
    # window-switch goes 24k (flash) → 40k (pro) → 24k: back on flash, its first check
    # goes by the range the flash decisions left, not by nothing (the engine resolves
    # the same policy for the same model, window and reserve).
    (log,) = session_logs(FIXTURE_HOMES / "window-switch")
    events = events_of(log)
    windows = [
        (i, e.data.context_window)
        for i, e in enumerate(events)
        if isinstance(e, RequestContext) and e.data is not None
    ]
    # The last event before the first request/header of the 40k model, and the first
    # request/context back on 24k after it.
    large = next(i for i, w in windows if w == 40_000)
    header = max(i for i in range(large) if isinstance(events[i], RequestHeader))
    back = next(i for i, w in windows if i > large and w == 24_000)
    left = fixture_snapshot("window-switch", at_seq=events[header - 1].seq)
    returned = fixture_snapshot("window-switch", at_seq=events[back].seq)
    assert returned.model == left.model == "deepseek-flash"
    assert left.inferred.low is not None and left.inferred.high is not None
    assert (returned.inferred.low, returned.inferred.high) == (
        left.inferred.low,
        left.inferred.high,
    )
    point = returned.pace_forecast.point
    assert (point.low, point.high, point.source) == (
        left.inferred.low,
        left.inferred.high,
        "inferred",
    )
