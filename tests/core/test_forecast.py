"""The fold forecast (dshweb.core.fold.forecast): its figures from a pace worked out here
by hand, each reason for saying nothing, and what a real log's replay gives it.

How well it forecasts is measured by ``bench/forecast_backtest.py`` against the folds
of the fixture sessions, not here.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dshweb.core.fold.forecast import (
    IDLE,
    IDLE_AFTER_MS,
    NO_POINT,
    NOT_GROWING,
    RECENT,
    TOO_FEW,
    Forecast,
    fold_forecast,
)
from dshweb.core.fold.index import HomeIndex
from tests.conftest import FIXTURE_HOMES
from tests.snapshots import fixture_snapshot

MINUTE = 60_000


def test_a_steady_pace_is_the_distance_over_the_growth() -> None:
    times = [i * MINUTE // 2 for i in range(6)]  # a step every 30 s
    said = fold_forecast(measured=6_000, threshold=12_000, growth=[1_000] * 5, times=times)
    # No spread: 6 steps of 1,000 exactly; the range is those steps.
    assert said == Forecast(6, 6, 6, 3.0, per_step=1_000.0)
    assert said.as_json() == {
        "steps": 6,
        "stepsLow": 6,
        "stepsHigh": 6,
        "minutes": 3.0,
        "reason": None,
    }


def test_steps_that_alternate_grow_steadily_by_the_pair() -> None:
    # A tool result of 1,900 then an answer of 100, again and again: every run of an even
    # number of steps grows by 1,000 a step, so the range beyond the runs is exact.
    said = fold_forecast(measured=2_000, threshold=12_000, growth=[1_900, 100] * 5)
    assert (said.steps, said.steps_low, said.steps_high) == (10, 10, 10)


def test_a_short_distance_is_read_from_the_runs_themselves() -> None:
    # 2,000 left: no run of one step covers it; runs of two are 1,900 + 100 = 2,000.
    said = fold_forecast(measured=10_000, threshold=12_000, growth=[1_900, 100] * 5)
    assert (said.steps, said.steps_low, said.steps_high) == (2, 2, 2)
    # 1,900 left: one step covers it when it is a tool result (the fast runs), not when
    # it is an answer: the range says so.
    near = fold_forecast(measured=10_100, threshold=12_000, growth=[1_900, 100] * 5)
    assert (near.steps_low, near.steps_high) == (1, 2)


def test_the_range_is_the_fast_and_the_slow_runs() -> None:
    growth = [300, 1_700, 1_500, 900, 400, 600, 1_500, 1_100]  # mean 1,000
    said = fold_forecast(measured=2_000, threshold=12_000, growth=growth)
    # 10,000 left, beyond the runs of 4 (half of 8): they grew by 4,400, 4,500, 3,400,
    # 3,400 and 3,600. The median, 3,600, is 400 under 4 × 1,000: k steps grow by
    # k × 1,000 − (400 / √4) × √k, which covers 10,000 at k = 11; the 90th percentile
    # run (4,460: k × 1,000 + 230 × √k) at k = 10; the 10th (3,400) at k = 11.
    assert (said.steps, said.steps_low, said.steps_high) == (11, 10, 11)


def test_one_huge_step_does_not_move_it_and_two_are_the_sessions_rhythm() -> None:
    calm = [200, 180, 220, 200, 190, 210, 200, 200]
    once = fold_forecast(measured=0, threshold=2_000, growth=[*calm[:4], 9_000, *calm[4:]])
    # The spike counted as the median, 200: every run of four grows by 800 or 810, ten
    # steps of 200 make 2,000.
    assert once.steps == 10
    twice = fold_forecast(measured=0, threshold=2_000, growth=[*calm, 9_000, 9_000])
    # Kept: a run of one huge step covers the distance at once, the fast end of the range.
    assert twice.steps_low == 1 and twice.steps is not None and twice.steps > 1


def test_only_the_recent_steps_count() -> None:
    old = [5_000] * 40
    said = fold_forecast(measured=0, threshold=6_000, growth=[*old, *([500] * RECENT)])
    assert said.steps == 12


def test_past_the_point_the_fold_is_due_at_the_next_step() -> None:
    said = fold_forecast(measured=12_500, threshold=12_000, growth=[400, 500, 600])
    assert (said.steps, said.steps_low, said.steps_high) == (1, 1, 1)


@pytest.mark.parametrize(
    ("threshold", "growth", "times", "now", "reason"),
    [
        (None, [500] * 5, [], None, NO_POINT),
        (12_000, [500, 500], [], None, TOO_FEW),
        (12_000, [0, 0, 0, 800], [], None, NOT_GROWING),
        (12_000, [500] * 5, [0, MINUTE], MINUTE + IDLE_AFTER_MS, IDLE),
    ],
)
def test_no_forecast_says_why(
    threshold: int | None, growth: list[int], times: list[int], now: int | None, reason: str
) -> None:
    said = fold_forecast(
        measured=1_000, threshold=threshold, growth=growth, times=times, now_ms=now
    )
    assert said == Forecast(reason=reason)
    assert said.as_json()["steps"] is None and said.as_json()["reason"] == reason


def test_a_session_that_resumes_before_the_idle_mark_has_a_forecast() -> None:
    said = fold_forecast(
        measured=1_000,
        threshold=12_000,
        growth=[500] * 5,
        times=[0, MINUTE],
        now_ms=MINUTE + IDLE_AFTER_MS - 1,
    )
    assert said.reason is None and said.steps == 22 and said.minutes == 22.0


def test_a_real_sessions_growth_goes_on_across_its_folds() -> None:
    shot = fixture_snapshot("pace-steady")
    assert shot.ledger.compactions >= 3
    # The plugin's samples start over at each fold; the forecast's keep every step's
    # growth (one per step boundary but the first), less the drops (each fold's).
    boundaries = len(shot.step_times)
    dropped = boundaries - 1 - len(shot.pace_growth)
    assert len(shot.pace_samples) < len(shot.pace_growth) <= boundaries - 1
    assert dropped >= shot.ledger.compactions
    assert all(g >= 0 for g in shot.pace_growth)
    point = shot.point
    assert point is not None and point.threshold_tokens == 12_000
    said = fold_forecast(
        measured=shot.measured_tokens,
        threshold=point.threshold_tokens,
        growth=shot.pace_growth,
        times=shot.step_times,
    )
    assert said.reason is None and said.steps is not None and said.minutes is not None
    assert said.steps_low is not None and said.steps_high is not None
    assert said.steps_low <= math.ceil(said.steps) <= said.steps_high


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
            assert shot.ledger.compactions == 0 and shot.threshold is None
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
    assert shot.threshold_source == "config" and shot.threshold == 12_000


def test_an_overflow_recovery_and_a_failed_compaction_decide_nothing_by_the_point() -> None:
    # fold-failures: the provider refused a request of 9,091 tokens as too large (DSH
    # folded at a measure of 9,000, under the point), and a compaction failed at 12,590
    # (the next request went out at 12,590, past it). Neither bounds the point.
    shot = fixture_snapshot("fold-failures", None)
    kinds = [(fold.kind, fold.status) for fold in shot.ledger.folds]
    assert kinds[:3] == [("overflow", "done"), ("automatic", "failed"), ("automatic", "done")]
    overflow, failed = shot.ledger.folds[:2]
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
