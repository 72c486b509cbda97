"""How many steps, and minutes, until a session's next automatic fold, from its own pace.

DSH compacts before a step once ``measure(session).totalTokens`` has reached the
compaction point (DSH_FACTS §7). :func:`fold_forecast` counts the steps whose growth
covers what is left below the point (the point minus the measure now), at the session's
growth per step over its last :data:`RECENT` step boundaries
(:class:`~dshweb.core.fold.pace.PaceCollector` keeps them across folds: a session's pace
goes on after a fold, so there is a forecast right after one). One spike (a single step
over :data:`SPIKE_MEDIANS` times the median: a huge tool result among ordinary steps)
counts as a median step; two or more are a new pace. (A tighter rule, by quartiles, took
the steps of a session changing pace, and of a session of very uneven steps, for spikes:
the backtest's hit rate fell from 0.75 to 0.69.) The range is where the growth of ``k``
steps, ``k × mean ± z × √k × spread``, covers what is left at :data:`SPREAD_Z` spreads
above and below its mean, the spread taken from pairs of consecutive steps (a tool
call's step and its answer's alternate: by the pair, such a session grows steadily).
Such a session's next step is of the kind of the last but one: its steps are counted in
turn, the next one's kind first (the backtest's mean error fell from 1.69 steps to
1.44). Minutes are the steps times the median time between the recent step boundaries.

No forecast, with the reason, when the session has no compaction point, fewer than
:data:`NEED` steps measured, does not grow (a median or mean growth of zero or less), or
has been idle for :data:`IDLE_AFTER_MS` (its pace says nothing about when it resumes).

``bench/forecast_backtest.py`` replays the fixture sessions step by step and scores the
ranges against the folds that came.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RECENT = 12
"""Step growths the forecast looks at: six turns of a tool call and its answer, recent
enough to follow a change of pace within a fold or two."""
NEED = 3
SPREAD_Z = 1.64
"""The range: the steps at which the growth runs this many spreads above its mean (the
low end) and below it (the high end): the 5th and 95th percentiles of a normal sum. (At
the 10th and 90th the backtest's ranges held the fold 0.80 of the time, 1 step wide at
the median; at these, 0.82, 2 steps wide.)"""
IDLE_AFTER_MS = 30 * 60 * 1000
SPIKE_MEDIANS = 20.0
"""A step this many times the median of the recent ones is a spike (when it is alone)."""

NO_POINT = "no compaction point"
TOO_FEW = "too few steps"
NOT_GROWING = "not growing"
IDLE = "idle"


@dataclass(frozen=True, slots=True)
class Forecast:
    """Steps (and minutes) until the next automatic fold; ``reason`` when there is none."""

    steps: int | None = None
    """The expected number of steps: at the start of the step after them, the measure
    will have reached the compaction point."""
    steps_low: int | None = None
    steps_high: int | None = None
    minutes: float | None = None
    reason: str | None = None
    per_step: float | None = None
    """The growth per step the forecast went by, in tokens."""

    def as_json(self) -> dict[str, Any]:
        """The ``forecast`` object of ``dsh_snapshot --json``."""
        return {
            "steps": self.steps,
            "stepsLow": self.steps_low,
            "stepsHigh": self.steps_high,
            "minutes": None if self.minutes is None else round(self.minutes, 2),
            "reason": self.reason,
        }


NO_FORECAST_YET = Forecast(reason=TOO_FEW)
"""A session that has not stepped yet."""


def fold_forecast(
    *,
    measured: int,
    threshold: int | None,
    growth: Sequence[int],
    times: Sequence[int] = (),
    now_ms: int | None = None,
) -> Forecast:
    """The forecast for a session measured at ``measured`` tokens, with compaction point
    ``threshold``, per-step ``growth`` (oldest first) and step start ``times`` (epoch ms);
    ``now_ms`` (epoch ms) tells an idle session (:func:`as_of`)."""
    return as_of(_forecast(measured, threshold, growth, times), times, now_ms)


def _forecast(
    measured: int, threshold: int | None, growth: Sequence[int], times: Sequence[int]
) -> Forecast:
    if threshold is None:
        return Forecast(reason=NO_POINT)
    recent = list(growth[-RECENT:])
    if len(recent) < NEED:
        return Forecast(reason=TOO_FEW)
    median = statistics.median(recent)
    if median <= 0:
        return Forecast(reason=NOT_GROWING)
    left = threshold - measured
    pattern = _without_spikes(recent, median)
    mean = statistics.fmean(pattern)
    if mean <= 0:  # a fold's shrinking among the steps outweighs their growth
        return Forecast(reason=NOT_GROWING)
    if left <= 0:  # due at the next step's start
        return Forecast(1, 1, 1, _minutes(1, times), per_step=mean)
    # The spread of the growth of two steps in a row, per step: a session whose steps
    # alternate (a tool call and its result, then the answer) grows steadily by the pair.
    pairs = [a + b for a, b in itertools.pairwise(pattern)]
    spread = math.sqrt(_variance(pairs) / 2) if len(pairs) > 1 else 0.0
    # The steps in the place the next one takes (every other one back from the last but
    # one), and the others: of a session that alternates, the next step is of the first.
    phase = (statistics.fmean(pattern[-2::-2]), statistics.fmean(pattern[-1::-2]))
    steps = _first(left, phase, spread, 0.0)
    low = _first(left, phase, spread, SPREAD_Z)
    high = _first(left, phase, spread, -SPREAD_Z)
    return Forecast(steps, low, max(low, high), _minutes(steps, times), per_step=mean)


def idle(times: Sequence[int], now_ms: int) -> bool:
    """Whether a session whose steps began at ``times`` has been idle too long at
    ``now_ms`` for its pace to say anything."""
    return bool(times) and now_ms - times[-1] >= IDLE_AFTER_MS


def as_of(forecast: Forecast, times: Sequence[int], now_ms: int | None) -> Forecast:
    """``forecast`` (made without a clock) as of ``now_ms``: none once the session idles."""
    if now_ms is not None and forecast.steps is not None and idle(times, now_ms):
        return Forecast(reason=IDLE)
    return forecast


def _variance(values: Sequence[float]) -> float:
    """The population variance in floats (``statistics.pvariance`` works in exact
    fractions: a tenth of a snapshot's cost)."""
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / len(values)


def _first(left: float, phase: tuple[float, float], spread: float, z: float) -> int:
    """The fewest steps ``k`` whose growth, ``z`` spreads above its mean, covers
    ``left``: ``k`` steps grow by the next step's ``phase[0]`` on the first, third, …
    and ``phase[1]`` on the others, and spread ``√k × spread``."""
    mean = (phase[0] + phase[1]) / 2
    # k × mean + z × √k × spread = left, a quadratic in √k; the phase moves the answer
    # by at most half their difference, in steps, found by stepping from below it.
    root = (-z * spread + math.sqrt(z * z * spread * spread + 4 * mean * left)) / (2 * mean)
    k = max(1, math.floor(root * root) - 1 - math.ceil(abs(phase[0] - phase[1]) / 2 / mean))
    while (k + 1) // 2 * phase[0] + k // 2 * phase[1] + z * math.sqrt(k) * spread < left - 1e-9:
        k += 1
    return k


def _without_spikes(values: Sequence[int], median: float) -> list[float]:
    """``values`` with a spike (over :data:`SPIKE_MEDIANS` times their median: one huge
    tool result among ordinary steps) counted as the median instead; two or more such
    steps are a new pace, and kept."""
    spikes = [i for i, v in enumerate(values) if v > SPIKE_MEDIANS * median]
    if len(spikes) != 1:
        return [float(v) for v in values]
    return [median if i == spikes[0] else float(v) for i, v in enumerate(values)]


def _minutes(steps: int, times: Sequence[int]) -> float | None:
    recent = list(times[-(RECENT + 1) :])
    gaps = [later - earlier for earlier, later in itertools.pairwise(recent)]
    if not gaps:
        return None
    return steps * max(0.0, statistics.median(gaps)) / 60_000
