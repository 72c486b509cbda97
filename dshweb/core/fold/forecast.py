"""How many steps, and minutes, until a session's next automatic fold, from its own pace.

DSH compacts before a step once ``measure(session).totalTokens`` has reached the
compaction point (DSH_FACTS §7). :func:`fold_forecast` counts the steps whose growth
covers what is left below the point (the point minus the measure now), judged by what
runs of steps in a row grew by in the session's last :data:`RECENT` step boundaries
(:class:`~dshweb.core.fold.pace.PaceCollector` keeps them across folds: a session's pace
goes on after a fold, so there is a forecast right after one). For ``k`` steps ahead it
takes every run of ``k`` consecutive recent steps and what they grew by: the expected
number of steps is the first ``k`` whose median run covers what is left, the range the
first ``k`` whose :data:`RANGE_QUANTILES` runs (the fast and the slow ones) cover it.
Runs keep what the session's steps do together: a tool call's step and its answer's
alternate, a phase of slow steps is followed by more slow steps, a big result comes every
few steps; so a pace that changes inside a fold cycle and a session pruned every few steps
are forecast by their own rhythm, not by an average. Runs longer than half the recent
steps are too few to read; beyond that length (a whole number of pairs of steps) the
spread of the longest runs grows as ``√k`` around ``k`` times the mean. One spike (a
single step over :data:`SPIKE_MEDIANS` times the median: a huge tool result among
ordinary steps) counts as a median step; two or more are the session's rhythm. Minutes
are the steps times the median time between the recent step boundaries.

No forecast, with the reason, when the session has no compaction point, fewer than
:data:`NEED` steps measured, does not grow (a median or mean growth of zero or less), or
has been idle for :data:`IDLE_AFTER_MS` (its pace says nothing about when it resumes).

``bench/forecast_backtest.py`` replays the fixture sessions step by step and scores the
ranges against the folds that came, per shape.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RECENT = 36
"""Step growths the forecast looks at: eighteen turns of a tool call and its answer,
enough runs to read a rhythm of a few turns, recent enough to follow a change of pace."""
NEED = 3
RANGE_QUANTILES = (0.9, 0.1)
"""The range: the steps at which the runs at the 90th percentile of growth (the low end)
and at the 10th (the high end) cover what is left."""
MAX_STEPS = 100_000
"""The most steps a forecast counts (a session barely growing towards a far point)."""
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
    runs = _Runs(_without_spikes(recent, median))
    if runs.mean <= 0:  # a fold's shrinking among the steps outweighs their growth
        return Forecast(reason=NOT_GROWING)
    if left <= 0:  # due at the next step's start
        return Forecast(1, 1, 1, _minutes(1, times), per_step=runs.mean)
    steps = runs.first(left, 0.5)
    fast, slow = (runs.first(left, q) for q in RANGE_QUANTILES)
    return Forecast(
        steps, min(fast, steps), max(slow, steps), _minutes(steps, times), per_step=runs.mean
    )


class _Runs:
    """What runs of consecutive steps grew by, among the recent ones."""

    def __init__(self, values: Sequence[float]) -> None:
        self.sums = [0.0, *itertools.accumulate(values)]
        self.count = len(values)
        self.mean = self.sums[-1] / self.count
        # Half the steps, and a whole number of pairs (a call's step and its answer's)
        # past which the spread grows as √k.
        self.longest = max(1, self.count // 4 * 2)
        self._sorted: dict[int, list[float]] = {}

    def _of(self, k: int) -> list[float]:
        """Every run of ``k`` steps' growth, sorted."""
        found = self._sorted.get(k)
        if found is None:
            sums = self.sums
            found = sorted(sums[s + k] - sums[s] for s in range(self.count - k + 1))
            self._sorted[k] = found
        return found

    def first(self, left: float, q: float) -> int:
        """The fewest steps whose runs at quantile ``q`` grow by ``left`` or more."""
        for k in range(1, self.longest + 1):
            if _quantile(self._of(k), q) >= left:
                return k
        # Longer: k × the mean, and the longest runs' spread at q grown as √(k / longest).
        m = self.longest
        spread = (_quantile(self._of(m), q) - m * self.mean) / math.sqrt(m)
        # k × mean + spread × √k = left, a quadratic in √k.
        root = (-spread + math.sqrt(spread * spread + 4 * self.mean * left)) / (2 * self.mean)
        k = max(m + 1, math.floor(root * root) - 1)
        while k < MAX_STEPS and k * self.mean + spread * math.sqrt(k) < left - 1e-9:
            k += 1
        return k


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``ordered`` (ascending), between its neighbours."""
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def idle(times: Sequence[int], now_ms: int) -> bool:
    """Whether a session whose steps began at ``times`` has been idle too long at
    ``now_ms`` for its pace to say anything."""
    return bool(times) and now_ms - times[-1] >= IDLE_AFTER_MS


def as_of(forecast: Forecast, times: Sequence[int], now_ms: int | None) -> Forecast:
    """``forecast`` (made without a clock) as of ``now_ms``: none once the session idles."""
    if now_ms is not None and forecast.steps is not None and idle(times, now_ms):
        return Forecast(reason=IDLE)
    return forecast


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
