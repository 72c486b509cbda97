"""The fold forecast (dshweb.core.fold.forecast): its figures from a pace worked out here
by hand, each reason for saying nothing, and what a real log's replay gives it.

How well it forecasts is measured by ``bench/forecast_backtest.py`` against the folds
of the fixture sessions, not here.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import msgspec
import pytest

from dshweb.core.fold.compaction import CompactionPoint
from dshweb.core.fold.forecast import (
    IDLE,
    IDLE_AFTER_MS,
    NEED,
    NO_POINT,
    NOT_GROWING,
    RECENT,
    TOO_FEW,
    Forecast,
    pass_forecast,
    summary_forecast,
)
from dshweb.core.fold.home_pace import KEPT, PRIOR_SESSIONS, HomePaces
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.known import UNKNOWN, Known
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.fold.point import InferredPoint, point_known
from dshweb.core.fold.pricing import freed
from dshweb.core.fold.session import SessionTracker, take_snapshot
from dshweb.core.log.home import session_logs
from dshweb.core.log.wire import StepStart, ToolResult
from tests.conftest import FIXTURE_HOMES
from tests.support.inferred import events_of
from tests.support.snapshots import fixture_snapshot, home_with_a_young_session

MINUTE = 60_000


def at(threshold: int) -> Known:
    """A compaction point the profile gives, and the engine's decisions allow."""
    return Known.exactly(threshold, "profile")


def test_a_steady_pace_is_the_distance_over_the_growth() -> None:
    times = [i * MINUTE // 2 for i in range(6)]  # a step every 30 s
    said = pass_forecast(measured=6_000, point=at(12_000), growth=[1_000] * 5, times=times)
    # No spread: 6 steps of 1,000 exactly. The range lets the pace drift by a fifth:
    # 6,000 / 1,200 = 5 steps, 6,000 / 800 = 7.5, so 8.
    assert said == Forecast(6, 5, 8, 3.0, per_step=1_000.0, point=at(12_000), pace="session")
    assert said.as_json() == {
        "steps": 6,
        "stepsLow": 5,
        "stepsHigh": 8,
        "minutes": 3.0,
        "reason": None,
        "point": {"low": 12_000, "high": 12_000, "source": "profile"},
        "pace": "session",
    }


def test_steps_that_alternate_grow_steadily_by_the_pair() -> None:
    # A tool result of 1,900 then an answer of 100, again and again: every run of an even
    # number of steps grows by 1,000 a step, so beyond the runs the range is the drift's
    # alone: 10,000 / 1,200 = 8.3, so 9; 10,000 / 800 = 12.5, so 13.
    said = pass_forecast(measured=2_000, point=at(12_000), growth=[1_900, 100] * 5)
    assert (said.steps, said.steps_low, said.steps_high) == (10, 9, 13)


def test_a_short_distance_is_read_from_the_runs_themselves() -> None:
    # 2,000 left: no run of one step covers it; runs of two are 1,900 + 100 = 2,000. The
    # slow end: runs of three at the 10th percentile (2,100), a fifth of 3,000 slower in
    # quadrature with their spread (900 under the median 3,000), fall short (1,918);
    # runs of four (4,000 less 800) do not.
    said = pass_forecast(measured=10_000, point=at(12_000), growth=[1_900, 100] * 5)
    assert (said.steps, said.steps_low, said.steps_high) == (2, 2, 4)
    # 1,900 left: one step covers it when it is a tool result (the fast runs: 1,000 +
    # √(900² + 200²) = 1,922), not when it is an answer.
    near = pass_forecast(measured=10_100, point=at(12_000), growth=[1_900, 100] * 5)
    assert (near.steps_low, near.steps_high) == (1, 3)


def test_the_range_is_the_fast_and_the_slow_runs() -> None:
    growth = [300, 1_700, 1_500, 900, 400, 600, 1_500, 1_100]  # mean 1,000
    said = pass_forecast(measured=2_000, point=at(12_000), growth=growth)
    # 10,000 left, beyond the runs of 4 (half of 8): they grew by 4,400, 4,500, 3,400,
    # 3,400 and 3,600. The median, 3,600, is 400 under 4 × 1,000: k steps grow by
    # k × 1,000 − (400 / √4) × √k, which covers 10,000 at k = 11. The 90th percentile
    # run (4,460) is 430 × √k above that, the 10th (3,400) 100 × √k under it; each in
    # quadrature with a fifth of k × 1,000: at k = 9, 8,400 + √(1,290² + 1,800²) covers
    # it; at k = 14, 13,252 − √(374² + 2,800²) does.
    assert (said.steps, said.steps_low, said.steps_high) == (11, 9, 14)


def test_one_huge_step_does_not_move_it_and_two_are_the_sessions_rhythm() -> None:
    calm = [200, 180, 220, 200, 190, 210, 200, 200]
    once = pass_forecast(measured=0, point=at(2_000), growth=[*calm[:4], 9_000, *calm[4:]])
    # The spike counted as the median, 200: every run of four grows by 800 or 810, ten
    # steps of 200 make 2,000.
    assert once.steps == 10
    twice = pass_forecast(measured=0, point=at(2_000), growth=[*calm, 9_000, 9_000])
    # Kept: a run of one huge step covers the distance at once, the fast end of the range.
    assert twice.steps_low == 1 and twice.steps is not None and twice.steps > 1


def test_a_session_that_repeats_a_cycle_is_forecast_by_where_in_it_it_is() -> None:
    # A big result every tenth step: the mean (290 a step) would cover 1,500 in about
    # five steps. Right after a big result the next one is ten steps away, and the fold
    # comes with it; three steps before the end of a cycle, with it three steps on.
    cycle = ([100] * 9 + [2_000]) * 5
    after = pass_forecast(measured=0, point=at(1_500), growth=cycle)
    assert (after.steps, after.steps_low, after.steps_high) == (10, 10, 10)
    before = pass_forecast(measured=0, point=at(1_500), growth=cycle[:-3])
    assert (before.steps, before.steps_low, before.steps_high) == (3, 3, 3)
    # With too few cycles seen to check the cycle against (two), the runs go on.
    young = pass_forecast(measured=0, point=at(1_500), growth=cycle[:20])
    assert young.steps is not None and young.steps < 10


def test_only_the_recent_steps_count() -> None:
    old = [5_000] * 40
    said = pass_forecast(measured=0, point=at(6_000), growth=[*old, *([500] * RECENT)])
    assert said.steps == 12


def test_one_step_measured_gives_a_wide_forecast_from_it() -> None:
    # 11,000 tokens left at 500 a step: 22 steps expected, the range widened by the
    # home's drift (half as fast to half again as fast), since one step says little.
    said = pass_forecast(measured=1_000, point=at(12_000), growth=[500])
    assert said.pace == "session" and said.steps == 22
    assert (said.steps_low, said.steps_high) == (15, 44)


def test_past_the_point_the_compaction_is_due_at_the_next_step() -> None:
    said = pass_forecast(measured=12_500, point=at(12_000), growth=[400, 500, 600])
    assert (said.steps, said.steps_low, said.steps_high) == (1, 1, 1)


@pytest.mark.parametrize(
    ("threshold", "growth", "times", "now", "reason"),
    [
        (None, [500] * 5, [], None, NO_POINT),
        (12_000, [], [], None, TOO_FEW),
        (12_000, [0], [], None, TOO_FEW),
        (12_000, [0, 0, 0, 800], [], None, NOT_GROWING),
        (12_000, [500] * 5, [0, MINUTE], MINUTE + IDLE_AFTER_MS, IDLE),
    ],
)
def test_no_forecast_says_why(
    threshold: int | None, growth: list[int], times: list[int], now: int | None, reason: str
) -> None:
    said = pass_forecast(
        measured=1_000,
        point=UNKNOWN if threshold is None else at(threshold),
        growth=growth,
        times=times,
        now_ms=now,
    )
    assert said == Forecast(reason=reason, point=UNKNOWN if threshold is None else at(threshold))
    assert said.as_json()["steps"] is None and said.as_json()["reason"] == reason
    assert said.as_json()["pace"] is None


def test_a_session_that_resumes_before_the_idle_mark_has_a_forecast() -> None:
    said = pass_forecast(
        measured=1_000,
        point=at(12_000),
        growth=[500] * 5,
        times=[0, MINUTE],
        now_ms=MINUTE + IDLE_AFTER_MS - 1,
    )
    assert said.reason is None and said.steps == 22 and said.minutes == 22.0


def test_the_first_step_counts_from_what_its_request_sent() -> None:
    # pace-steady: seq 14 is the first step's assistant/message, seq 20 the second
    # step/start. What the first request sent (the system prompt, the tools, the runtime
    # context) is sent once; what the step added after it is its growth.
    sent = fixture_snapshot("pace-steady", at_seq=13).measured_tokens
    ended = fixture_snapshot("pace-steady", at_seq=19).measured_tokens
    second = fixture_snapshot("pace-steady", at_seq=20)
    assert sent > 5_000 and second.pace_growth == (ended - sent,)
    assert 1_000 < ended - sent < 1_200  # a tool call and its 150-row result, as later


def test_each_step_counts_with_what_it_added_up_to_the_engines_check() -> None:
    # hidden-sdk-4: small tool results, and a big one (10,000 characters, no pruner)
    # every fifth turn; each big one took the measure past the point, and the fold before
    # the next step took it back down. The step that crossed counts with all it added
    # (a reading just before the next step would see only the fold's drop).
    home = FIXTURE_HOMES / "hidden-sdk-4"
    (log,) = session_logs(home)
    events = events_of(log)
    big = [
        e for e in events if isinstance(e, ToolResult) and len(msgspec.json.encode(e.data)) > 10_000
    ]
    starts = sum(isinstance(e, StepStart) for e in events)
    shot = fixture_snapshot("hidden-sdk-4")
    assert shot.ledger.summaries >= 5 and len(big) >= shot.ledger.summaries
    # One growth a step (the first from what its request sent), but the one under way
    # and the one after each compaction whose reading fell (the provider's count of the
    # new context re-anchored the measure).
    assert starts - 1 - shot.ledger.summaries <= len(shot.pace_growth) < starts - 1
    assert sum(g > 2_000 for g in shot.pace_growth) == len(big)
    assert all(g >= 0 for g in shot.pace_growth)
    said = pass_forecast(
        measured=shot.measured_tokens,
        point=shot.pace_forecast.point,
        growth=shot.pace_growth,
        times=shot.step_times,
    )
    assert said.reason is None and said.steps is not None and said.minutes is not None
    assert said.steps_low is not None and said.steps_high is not None
    assert said.steps_low <= said.steps <= said.steps_high


CUTS = (60, 150, 300, 450, None)


def test_a_point_set_by_a_patch_the_log_does_not_record_is_inferred_and_narrows() -> None:
    # patched-point ran under `dsh --patch` with the small window's settings (point
    # 12,000); the home's profile says nothing of them: no configured point for its window.
    widths = []
    for seq in CUTS:
        shot = fixture_snapshot("patched-point", seq)
        assert shot.point is not None and shot.point.threshold_tokens is None
        inferred = shot.inferred
        assert shot.threshold_source == "inferred" and inferred.decisions > 0
        assert inferred.low is not None and inferred.low <= 12_000
        if inferred.high is None:  # no fold yet: only how low it is not
            assert shot.ledger.summaries == 0 and shot.threshold is None
            continue
        assert inferred.high >= 12_000
        assert shot.threshold == (inferred.low + inferred.high) // 2
        widths.append(inferred.high - inferred.low)
    assert len(widths) == 4 and widths == sorted(widths, reverse=True) and widths[0] > widths[-1]
    assert widths[-1] <= 120  # eight folds later: within 1% of the point
    last = fixture_snapshot("patched-point", None)
    assert last.as_json()["compaction"]["inferred"] == {
        "low": last.inferred.low,
        "high": last.inferred.high,
        "decisions": last.inferred.decisions,
    }
    assert last.pace_forecast.steps is not None  # the forecast goes by the inferred point


@pytest.mark.parametrize(
    "home_name", ["auto-compact", "pace-steady", "pace-mixed", "demo-live", "fold-failures"]
)
def test_a_configured_point_the_engine_went_by_is_the_one_shown(home_name: str) -> None:
    shot = fixture_snapshot(home_name, None)
    assert shot.point is not None and shot.point.threshold_tokens == 12_000
    assert shot.inferred.decisions > 0 and shot.inferred.holds(12_000)
    assert shot.inferred.high is not None  # these fold: bounded both ways
    assert shot.threshold_source == "profile" and shot.threshold == 12_000


def test_an_overflow_recovery_and_a_failed_compaction_decide_nothing_by_the_point() -> None:
    # fold-failures: the provider refused a request of 9,091 tokens as too large (DSH
    # folded at a measure of 9,000, under the point), and a compaction failed at 12,590
    # (the next request went out at 12,590, past it). Neither bounds the point.
    shot = fixture_snapshot("fold-failures", None)
    kinds = [(compaction.kind, compaction.status) for compaction in shot.ledger.compactions]
    assert kinds[:3] == [("overflow", "done"), ("automatic", "failed"), ("automatic", "done")]
    overflow, failed = shot.ledger.compactions[:2]
    assert overflow.before is not None and overflow.before < 12_000
    assert failed.before is not None and failed.before > 12_000
    assert shot.inferred.low is not None and shot.inferred.high is not None
    assert shot.inferred.low <= 12_000 <= shot.inferred.high
    assert shot.inferred.high - shot.inferred.low < 1_500  # folds at ~12.6K, passes at ~11.1K


def test_a_configured_point_the_engine_did_not_go_by_gives_way_to_the_inferred(
    tmp_path: Path,
) -> None:
    import shutil

    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "pace-steady", home)
    layer = home / "profiles" / "sdk" / "cordis.patch.yml"
    layer.write_text(layer.read_text().replace("thresholdRatio: 0.5", "thresholdRatio: 0.7"))
    index = HomeIndex(home)
    index.refresh()
    (folder,) = index.trackers
    shot = index.snapshot(folder)
    assert shot.point is not None and shot.point.threshold_tokens == 16_800
    low, high = shot.inferred.low, shot.inferred.high
    assert low is not None and high is not None and low <= 12_000 <= high < 16_800
    assert shot.threshold_source == "inferred" and shot.threshold == (low + high) // 2


# What the forecasts go by of the point: a range, its ends used as its ends.

WINDOW, RESERVED = 24_000, 3_000


def _profile(threshold: int | None) -> CompactionPoint:
    return CompactionPoint(WINDOW, RESERVED, threshold, 2_100)


@pytest.mark.parametrize(
    ("point", "inferred", "window", "known"),
    [
        # The profile's, while the decisions allow it (or there are none yet).
        (_profile(12_000), InferredPoint(), WINDOW, Known(12_000, 12_000, "profile")),
        (
            _profile(12_000),
            InferredPoint(11_000, 12_500, 9),
            WINDOW,
            Known(12_000, 12_000, "profile"),
        ),
        # Ruled out by the folds: the range they allow.
        (
            _profile(16_800),
            InferredPoint(11_959, 12_021, 30),
            WINDOW,
            Known(11_959, 12_021, "inferred"),
        ),
        # Ruled out before any fold (a step went out past it): bounded above by the
        # engine's own rule, the message budget (window − reserved).
        (
            _profile(12_000),
            InferredPoint(12_500, None, 4),
            WINDOW,
            Known(12_500, 21_000, "inferred"),
        ),
        # No point in the profile (no pressure budget by its settings): the rule's range,
        # once a step has gone out (before, nothing says the engine compacts at all).
        (_profile(None), InferredPoint(5_825, None, 1), WINDOW, Known(5_825, 21_000, "inferred")),
        (_profile(None), InferredPoint(), WINDOW, UNKNOWN),
        # Past the engine's own ceiling without a fold: open above, never inverted.
        (_profile(None), InferredPoint(22_000, None, 3), WINDOW, Known(22_000, None, "inferred")),
        # Neither a profile's point nor a window: nothing.
        (None, InferredPoint(), None, UNKNOWN),
        (None, InferredPoint(5_000, None, 2), None, Known(5_000, None, "inferred")),
    ],
)
def test_the_point_the_forecasts_go_by(
    point: CompactionPoint | None, inferred: InferredPoint, window: int | None, known: Known
) -> None:
    meter = SessionMeter()
    meter.context_window, meter.reserved_tokens = window, RESERVED
    assert point_known(point, inferred, meter) == known


def test_the_ends_of_the_range_go_by_the_ends_of_the_point() -> None:
    # 1,000 a step from 2,000: the point's low end, 8,000, is 6 steps away, its high end,
    # 12,000, 10. The range holds both ends as the exact points' ranges do (5–8, 9–13),
    # each end narrowed a little: the pace at its fastest and the point at its lowest
    # are independent (taken in quadrature), not both at once.
    growth = [1_000] * 8
    low = pass_forecast(measured=2_000, point=at(8_000), growth=growth)
    high = pass_forecast(measured=2_000, point=at(12_000), growth=growth)
    both = pass_forecast(measured=2_000, point=Known(8_000, 12_000, "inferred"), growth=growth)
    assert (low.steps_low, low.steps_high, high.steps_low, high.steps_high) == (5, 8, 9, 13)
    assert (both.steps, both.steps_low, both.steps_high) == (8, 6, 11)
    assert both.point == Known(8_000, 12_000, "inferred") and both.pace == "session"
    # Open above: "6 or more".
    open_ = pass_forecast(measured=2_000, point=Known(8_000, None, "inferred"), growth=growth)
    assert (open_.steps, open_.steps_low, open_.steps_high) == (6, 5, None)
    assert open_.as_json()["stepsHigh"] is None and open_.as_json()["steps"] == 6
    # Past the high end: due; past the low end only, it may be due.
    assert pass_forecast(measured=12_000, point=both.point, growth=growth).steps_high == 1
    inside = pass_forecast(measured=9_000, point=both.point, growth=growth)
    assert (inside.steps, inside.steps_low) == (1, 1) and inside.steps_high == 4


def test_before_the_first_compaction_under_an_unrecorded_patch_the_forecast_goes_by_the_rule() -> (
    None
):
    # hidden-sdk-1 ran under a patch its log does not record (point 13,202 in a window of
    # 24,000 with 3,000 reserved); the home's profile gives no point for that window.
    # Before its first fold (seq 402) only the steps let out bound the point (below);
    # the engine's rule bounds it above (21,000): a forecast, and the truth in its range.
    before = fixture_snapshot("hidden-sdk-1", 372)
    assert before.ledger.summaries == 0 and before.threshold is None
    said = before.forecast()
    assert said.point.source == "inferred" and said.point.high == WINDOW - RESERVED
    assert said.point.low == before.inferred.low and said.point.holds(13_202)
    assert said.pace == "session" and said.steps is not None
    assert said.steps_low is not None and said.steps_high is not None
    assert said.steps_low <= said.steps <= said.steps_high
    assert before.as_json()["forecast"]["point"] == {
        "low": before.inferred.low,
        "high": 21_000,
        "source": "inferred",
    }
    # After it, the fold bounds it from above: the range narrows to the decisions'.
    after = fixture_snapshot("hidden-sdk-1", 442).forecast()
    assert after.point.source == "inferred" and after.point.holds(13_202)
    assert after.point.high is not None and after.point.high <= 13_231  # the fold's measure
    assert after.steps_low is not None and after.steps_high is not None
    assert after.steps_high - after.steps_low < said.steps_high - said.steps_low


def test_the_summary_comes_when_what_the_prunes_cannot_free_reaches_the_point() -> None:
    # Every other step adds a result of 3,000 tokens that a prune cuts to 500; two such
    # results are on the surface now (5,000 freeable), the measure at 9,000, the point
    # at 10,000. The next pass comes at the next step (a big result crosses the point)
    # and prunes; the summary waits until the net measure, 4,000, has grown by 6,000 at
    # its net pace, 600 a pair of steps: 20 steps (a fifth faster or slower: 17–25).
    point, growth = at(10_000), [3_000, 100] * 6
    passing = pass_forecast(measured=9_000, point=point, growth=growth)
    summary = summary_forecast(
        measured=9_000, freeable_now=5_000, point=point, net_growth=[500, 100] * 6
    )
    assert (passing.steps, passing.steps_low) == (1, 1)
    assert (summary.steps, summary.steps_low, summary.steps_high) == (20, 17, 25)
    assert summary.point == point and summary.pace == "session"
    # Nothing prunable (the pruner off, or no result over its threshold): the same.
    same = summary_forecast(measured=9_000, freeable_now=0, point=point, net_growth=growth)
    assert same == passing


def test_a_young_session_goes_by_the_pace_of_the_homes_other_sessions() -> None:
    # Too few steps of its own: the steps of the home's other sessions on the model,
    # taken as alike, with half again as much drift as its own pace would have.
    point = at(12_000)
    young = pass_forecast(measured=2_000, point=point, growth=[1_000], prior=[1_000] * 8)
    own = pass_forecast(measured=2_000, point=point, growth=[1_000] * 8)
    assert young.pace == "home" and own.pace == "session"
    assert young.steps == own.steps == 10
    assert (young.steps_low, young.steps_high) == (7, 20)  # 10,000 / 1,500 and / 500
    assert (own.steps_low, own.steps_high) == (9, 13)
    # Its one step alone: the same drift as the home's, from that step.
    alone = pass_forecast(measured=2_000, point=point, growth=[1_000])
    assert alone.pace == "session" and (alone.steps, alone.steps_low) == (10, 7)
    assert alone.steps_high == 20
    # Nothing to go by: none, and why.
    assert pass_forecast(measured=2_000, point=point, growth=[]) == Forecast(
        reason=TOO_FEW, point=point
    )
    stalled = pass_forecast(measured=2_000, point=point, growth=[], prior=[0, 0, 5])
    assert stalled.reason == NOT_GROWING


def test_the_home_keeps_the_latest_sessions_pace_by_model() -> None:
    paces = HomePaces()
    for n in range(KEPT + 2):
        paces.note(f"s{n}", "flash", n, [100 + n] * 3)
    paces.note("p", "pro", 1, [900, 900])
    paces.note("young", "flash", 99, [5])  # too few steps: not kept
    kept = [paced.key for paced in paces.by_model["flash"]]
    assert kept == [f"s{n}" for n in range(KEPT + 1, 1, -1)]  # the latest, newest first
    prior = paces.prior("young", "flash")
    assert prior == tuple(
        g for n in range(KEPT + 1, KEPT + 1 - PRIOR_SESSIONS, -1) for g in [100 + n] * 3
    )
    # A session's own steps are never its prior; another model's never either.
    assert 100 + KEPT + 1 not in paces.prior(f"s{KEPT + 1}", "flash")
    assert paces.prior("young", "pro") == (900, 900) and paces.prior("young", None) == ()
    # A session that moves to another model, or goes away, leaves its old one.
    paces.note(f"s{KEPT + 1}", "pro", 100, [7, 7])
    assert f"s{KEPT + 1}" not in [paced.key for paced in paces.by_model["flash"]]
    paces.forget("p")
    assert paces.prior("young", "pro") == (7, 7)


def test_the_home_keeps_the_same_paces_whatever_order_its_sessions_fold_in() -> None:
    # Copies of one log end at the same time: which of them are kept, and so a young
    # session's prior, must not hang on the order a cold read, a restart or a spread
    # read happens to fold them in.
    notes = [(f"s{n}", 50 if n % 3 else 40, [100 + n] * 3) for n in range(3 * KEPT)]
    seen = set()
    for order in (notes, notes[::-1], notes[1::2] + notes[::2]):
        paces = HomePaces()
        for key, last, growth in order:
            paces.note(key, "flash", last, growth)
        seen.add(paces.prior("young", "flash"))
    assert len(seen) == 1 and len(next(iter(seen))) == 3 * PRIOR_SESSIONS


def test_a_young_session_of_a_home_is_forecast_by_its_other_sessions(tmp_path: Path) -> None:
    import shutil

    index, young, older = home_with_a_young_session(tmp_path)
    shot, other = index.snapshot(young), index.snapshot(older)
    assert 0 < len(shot.pace_growth) < NEED and shot.model == other.model is not None
    said = shot.forecast()
    assert said.pace == "home" and said.point == at(12_000) and said.steps is not None
    assert said.steps_low is not None and said.steps_high is not None
    assert said.steps_low <= said.steps <= said.steps_high
    assert shot.as_json()["forecast"]["pace"] == "home"
    # The other session has a pace of its own.
    assert other.forecast().pace == "session"
    # Without the other session, its one step, as widely.
    shutil.rmtree(older)
    index.refresh()
    alone = index.snapshot(young).forecast()
    assert alone.pace == "session" and alone.per_step == shot.pace_growth[0]
    assert alone.steps_low is not None and alone.steps_high is not None


@pytest.mark.parametrize(
    "home",
    sorted(p for p in FIXTURE_HOMES.iterdir() if (p / "sessions").is_dir()),
    ids=lambda p: p.name,
)
def test_after_its_first_step_a_session_has_a_point_and_a_forecast_with_sources(
    home: Path,
) -> None:
    """At every step boundary after a session's first step, of every fixture session
    (its own steps alone: no other session of the home lends it a pace), both forecasts
    say how many steps, or that the session does not grow; each names the point it went
    by and its source, and whose pace."""
    index = HomeIndex(home)
    index.refresh()
    checked = 0
    for whole in list(index.trackers.values()):
        settings = index.settings_of(whole)[1]
        tracker = SessionTracker(whole.log, settings_of=index._settings)
        for event in events_of(whole.log):
            tracker._fold(event)
            if isinstance(event, StepStart) and tracker.pace.checks.steps >= 2:
                shot = take_snapshot(
                    tracker,
                    home=home,
                    live=False,
                    engine=settings.engine,
                    pruner=settings.pruner,
                    models=settings.models,
                )
                for said in (shot.forecast(), shot.summary_forecast()):
                    where = f"{whole.log.path.parent.name} at seq {event.seq}: {said}"
                    assert said.steps is not None or said.reason == NOT_GROWING, where
                    assert said.point.low is not None or said.point.high is not None, where
                    assert said.point.source in ("profile", "catalogue", "inferred"), where
                    assert said.steps is None or said.pace == "session", where
                    json = said.as_json()
                    assert json["point"]["source"] == said.point.source, where
                checked += 1
    assert checked > 0


def test_a_snapshot_makes_its_forecasts_when_first_read_and_pickles_the_net_growth() -> None:
    # prune-heavy: big results pruned at most passes, so a step's net growth (less what
    # cutting the results it added frees) differs from its growth.
    index = HomeIndex(FIXTURE_HOMES / "prune-heavy")
    index.refresh()
    (folder,) = index.trackers
    tracker = index.trackers[folder]
    untouched = index.snapshot(folder).forecasts
    assert not untouched.read and untouched._net is None  # nothing worked out yet
    shot = index.snapshot(folder)
    forecasts = shot.forecasts
    cut = forecasts._cut  # the likeliest cut the snapshot took
    assert cut is not None and len(forecasts._added) == len(shot.pace_growth) > RECENT
    net = tuple(
        g - sum(freed(shape, cut) for shape in step)
        for g, step in zip(shot.pace_growth, tracker.pace.checks.added, strict=True)
    )
    assert net != shot.pace_growth and min(net) < max(net)
    point, times = forecasts.point, shot.step_times
    expected_pass = pass_forecast(
        measured=forecasts.measured, point=point, growth=shot.pace_growth, times=times
    )
    expected_summary = summary_forecast(
        measured=forecasts.measured,
        freeable_now=forecasts.freeable_now,
        point=point,
        net_growth=net,
        times=times,
    )
    assert expected_pass != expected_summary  # the two differ here, so each is checked
    assert shot.pace_forecast == expected_pass and shot.summary_pace_forecast == expected_summary
    assert forecasts._made == (expected_pass, expected_summary) and forecasts._net == net

    # A sealed snapshot (a collector's) carries the net growth, not the results' shapes.
    again = pickle.loads(pickle.dumps(index.snapshot(folder)))
    assert again.forecasts._added == () and again.forecasts._net == net and not again.forecasts.read
    assert again.forecasts == forecasts and again == shot
    assert dataclasses.asdict(again) == dataclasses.asdict(shot)  # read or not, sealed or not
    assert again.summary_pace_forecast == expected_summary
