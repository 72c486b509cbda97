"""How many steps, and minutes, until a session's next automatic fold, from its own pace.

DSH compacts before a step once ``measure(session).totalTokens`` has reached the
compaction point (DSH_FACTS §7). :func:`fold_forecast` counts the steps whose growth
covers what is left below the point (the point minus the measure the steps to come grow
from), by each step's growth as the engine's check saw it
(:class:`~dshweb.core.fold.pace.CheckGrowth`: the step that crossed the point counts with
all it added, and a session's pace goes on after a fold, so there is a forecast right
after one). Two readings of the pace say what the next ``k`` steps grow by:

- :class:`_Runs`, the session's rhythm: every run of ``k`` consecutive steps among the
  last :data:`RECENT`, and what it grew by. Runs keep what steps do together: a tool
  call's step and its answer's alternate, slow steps follow slow ones, a big result comes
  every few steps. Runs longer than half the recent steps are too few to read; beyond
  that length (a whole number of pairs of steps) the spread of the longest runs grows as
  ``√k`` around ``k`` times the mean. One spike (a single step over :data:`SPIKE_MEDIANS`
  times the median: a huge tool result among ordinary steps) counts as a median step;
  two or more are the session's rhythm.
- :class:`_Repeat`, the session's cycle: its last :data:`PERIODS` periods of ``P`` steps,
  repeated, for the period ``P`` (up to :data:`RECENT`) by which the recent steps repeat
  best; a period of two is a tool call and its answer, a longer one a task the agent does
  over and over (a big result every fifth turn, a slow phase and a fast one), and it knows
  where in its cycle the session is now.

The one that foretold the session's own last steps better is used (:func:`_pace`: for
each of the last :data:`CHECKED` step boundaries, what each said the :data:`CHECK_AHEAD`
steps after it would grow by, beside what they did). The expected number of steps is the
first ``k`` whose median growth covers what is left; the range, the first ``k`` whose
:data:`RANGE_QUANTILES` growths (the fast and the slow) do, each widened by :data:`DRIFT`
of ``k`` steps at the mean pace (the steps to come may go faster or slower than the
recent ones did, as a session's do). Minutes are the steps times the median time between
the recent step boundaries.

No forecast, with the reason, when the session has no compaction point, fewer than
:data:`NEED` steps measured, does not grow (a median or mean growth of zero or less), or
has been idle for :data:`IDLE_AFTER_MS` (its pace says nothing about when it resumes).

``bench/forecast_backtest.py`` replays the fixture sessions step by step and scores the
ranges against the folds that came, per shape.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

RECENT = 36
"""Step growths the runs look at: eighteen turns of a tool call and its answer, enough
runs to read a rhythm of a few turns, recent enough to follow a change of pace; also the
longest period looked for."""
NEED = 2
RANGE_QUANTILES = (0.9, 0.1)
"""The range: the steps at which the growth at the 90th percentile (the low end) and at
the 10th (the high end) covers what is left."""
DRIFT = 0.2
"""How much faster or slower than the recent pace the steps to come may go, as a share of
it: the range is widened by this share of ``k`` steps at the mean pace."""
PERIODS = 3
"""The periods of a cycle repeated (the last ones; a median of three)."""
CHECKED = 8
"""Step boundaries at which the runs and the cycle are checked against what came next."""
CHECK_AHEAD = 6
"""Steps ahead they are checked on."""
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
    history = tuple(float(g) for g in growth)
    if len(history) < NEED:
        return Forecast(reason=TOO_FEW)
    if statistics.median(history[-RECENT:]) <= 0:
        return Forecast(reason=NOT_GROWING)
    pace = _pace(history)
    if pace.mean <= 0:  # a fold's shrinking among the steps outweighs their growth
        return Forecast(reason=NOT_GROWING)
    left = threshold - measured
    if left <= 0:  # due at the next step's start
        return Forecast(1, 1, 1, _minutes(1, times), per_step=pace.mean)
    steps = _reach(pace, left, 0.5)
    fast, slow = (_reach(pace, left, q) for q in RANGE_QUANTILES)
    return Forecast(
        steps, min(fast, steps), max(slow, steps), _minutes(steps, times), per_step=pace.mean
    )


class _Pace(Protocol):
    mean: float

    def grows(self, k: int, q: float) -> float:
        """What the next ``k`` steps grow by, at quantile ``q`` of what they may."""


class _Runs:
    """What runs of consecutive steps grew by, among the recent ones."""

    def __init__(self, history: Sequence[float]) -> None:
        recent = history[-RECENT:]
        values = _without_spikes(recent, statistics.median(recent))
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

    def grows(self, k: int, q: float) -> float:
        if k <= self.longest:
            return _quantile(self._of(k), q)
        # Longer: k × the mean, and the longest runs' spread at q grown as √(k / longest).
        m = self.longest
        spread = (_quantile(self._of(m), q) - m * self.mean) / math.sqrt(m)
        return k * self.mean + spread * math.sqrt(k)


class _Repeat:
    """The session's last :data:`PERIODS` periods of ``period`` steps, each repeated."""

    def __init__(self, history: Sequence[float], period: int) -> None:
        end = len(history)
        self.period = period
        # Each cycle's running sums: what its first j steps grew by, for j = 0…period.
        self.cycles = [
            [0.0, *itertools.accumulate(history[end - i * period : end - (i - 1) * period])]
            for i in range(1, PERIODS + 1)
            if end - i * period >= 0
        ]
        self.mean = sum(cycle[-1] for cycle in self.cycles) / len(self.cycles) / period

    def grows(self, k: int, q: float) -> float:
        whole, part = divmod(k, self.period)
        return _quantile(sorted(whole * cycle[-1] + cycle[part] for cycle in self.cycles), q)


def _period(history: Sequence[float]) -> int | None:
    """The period by which the recent steps repeat best: the ``P`` whose steps differ
    least from the ones ``P`` before them (the smallest such ``P``), over the last two
    periods at least; ``None`` before there are two periods to compare."""
    best: tuple[float, int] | None = None
    end = len(history)
    for period in range(2, min(RECENT, end // 2) + 1):
        start = max(period, end - 3 * period)
        later, earlier = history[start:end], history[start - period : end - period]
        diff = sum(map(abs, map(operator.sub, later, earlier))) / (end - start)
        if best is None or diff < best[0]:
            best = (diff, period)
    return best[1] if best is not None else None


@functools.lru_cache(maxsize=1024)
def _pace(history: tuple[float, ...]) -> _Pace:
    """The runs, or the cycle when the session repeats one and it foretold the session's
    own last steps better. Kept for the latest histories: a session's growth changes once
    a step, its forecast at every event."""
    runs = _Runs(history)
    period = _period(history)
    if period is None:
        return runs
    cycle = _Repeat(history, period)
    origins = range(
        max(0, len(history) - CHECK_AHEAD - CHECKED + 1), len(history) - CHECK_AHEAD + 1
    )
    misses = {"runs": 0.0, "cycle": 0.0}
    checked = 0
    for origin in origins:
        before = history[:origin]
        if len(before) < max(NEED, 2 * period):
            continue
        came = sum(history[origin : origin + CHECK_AHEAD])
        said = {
            "runs": _Runs(before).grows(CHECK_AHEAD, 0.5),
            "cycle": _Repeat(before, period).grows(CHECK_AHEAD, 0.5),
        }
        for name, value in said.items():
            misses[name] += abs(value - came) / max(came, 1.0)
        checked += 1
    if checked * 2 < CHECKED or misses["cycle"] >= misses["runs"]:
        return runs
    return cycle


def _reach(pace: _Pace, left: float, q: float) -> int:
    """The fewest steps whose growth at quantile ``q``, widened by :data:`DRIFT`, covers
    ``left``."""

    def covers(k: int) -> bool:
        median = pace.grows(k, 0.5)
        if q == 0.5:
            return median >= left
        off, drift = pace.grows(k, q) - median, DRIFT * k * pace.mean
        return median + math.copysign(math.hypot(off, drift), q - 0.5) >= left

    # Counted one by one through the runs' own lengths, then by doubling and halving.
    for k in range(1, RECENT + 1):
        if covers(k):
            return k
    low, high = RECENT, RECENT * 2
    while not covers(high):
        if high >= MAX_STEPS:
            return MAX_STEPS
        low, high = high, min(high * 2, MAX_STEPS)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if covers(middle) else (middle, high)
    return high


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


def _without_spikes(values: Sequence[float], median: float) -> list[float]:
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
