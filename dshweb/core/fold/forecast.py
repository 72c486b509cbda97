"""How many steps, and minutes, until a session's next pass (and next summary), from its
own pace.

DSH checks before every step whether ``measure(session).totalTokens`` has reached the
compaction point (DSH_FACTS §7); when it has, it prunes first (every surface tool
result over the pruner's threshold is cut), measures again, and summarises only when the
measure is still at or past the point. Two forecasts follow:

- :func:`pass_forecast`, the next *pass*: the raw measure reaching the point (a prune or
  a summary comes then);
- :func:`summary_forecast`, the next *summary* (the model call that rewrites the
  context): at every pass everything prunable is pruned, so a summary comes at the first
  check where the measure *net* of what a prune of every result then on the surface would
  free reaches the point. A prune leaves that net measure where it was (it frees exactly
  what it cuts), so it grows by each step's net growth (its growth less what pruning the
  results it added frees) across the passes to come, and the same counting applies to it.

Each goes by what is known of the point (:class:`~dshweb.core.fold.known.Known`): the
fast end of the range by the point's low end, the slow end by its high end (open above
when nothing bounds the point there: "N or more steps"), never one value picked from
inside the range. The point's half-range counts beside the pace's spread and drift as an
independent uncertainty (in quadrature), so a range of points and a fast pace are not
both taken at their extremes at once; the expected steps take the point anywhere in its
range alike (its middle). :func:`pass_forecast` counts the steps whose growth covers what
is left below the point (the point minus the measure the steps to come grow from), by
each step's growth as the engine's check saw it
(:class:`~dshweb.core.fold.pace.CheckGrowth`: the step that crossed the point counts with
all it added, and a session's pace goes on after a pass, so there is a forecast right
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

Before the session has :data:`NEED` steps of its own to measure, the pace is this home's
other sessions' on the same model (``pace="home"``: the steps they grew by, each alike,
the spread growing as ``√k``), with the range widened by :data:`HOME_DRIFT` instead of
:data:`DRIFT`: it says how little it knows. A session with one step measured and no such
sessions goes by that step, widened by :data:`HOME_DRIFT` too. Otherwise
``pace="session"``.

No forecast, with the reason, when nothing is known of the compaction point (no profile's
point and no window: before the first ``request/header`` names the model), no step is
measured yet and the home has no other session on the model, the session does not grow
(a median or mean growth of zero or less), or it has been idle for :data:`IDLE_AFTER_MS`
(its pace says nothing about when it resumes).

``bench/forecast_backtest.py`` replays the fixture sessions step by step and scores the
ranges against the passes that came, per shape.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import statistics
from collections.abc import Sequence
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from dshweb.core.fold.known import UNKNOWN, Known

if TYPE_CHECKING:  # the pricing (and the log's decoders) come with the first log's fold
    from dshweb.core.fold.pricing import PruneCut, Shape

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
HOME_DRIFT = 0.5
"""The same for a forecast from this home's other sessions on the model: this session may
go half as fast or half again as fast as they did."""
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

PaceSource = Literal["session", "home"]
"""Whose pace a forecast went by: the session's own steps, or this home's other sessions'
on the same model (before the session has :data:`NEED` steps)."""


@dataclass(frozen=True, slots=True)
class Forecast:
    """Steps (and minutes) until the next pass (or summary); ``reason`` when there is none."""

    steps: int | None = None
    """The expected number of steps: at the start of the step after them, the measure
    will have reached the compaction point (when only a range of it is known, the point
    anywhere in it alike: its middle)."""
    steps_low: int | None = None
    steps_high: int | None = None
    """``None`` with ``steps`` given: the range is open above (nothing bounds the point
    there), "``steps_low`` or more"."""
    minutes: float | None = None
    reason: str | None = None
    per_step: float | None = None
    """The growth per step the forecast went by, in tokens."""
    point: Known = UNKNOWN
    """What it went by of the compaction point, and where that came from."""
    pace: PaceSource | None = None
    """Whose pace it went by (``None`` with no forecast)."""

    def as_json(self) -> dict[str, Any]:
        """The ``forecast`` (and ``summaryForecast``) object of ``dsh_snapshot --json``."""
        return {
            "steps": self.steps,
            "stepsLow": self.steps_low,
            "stepsHigh": self.steps_high,
            "minutes": None if self.minutes is None else round(self.minutes, 2),
            "reason": self.reason,
            "point": self.point.as_json(),
            "pace": self.pace,
        }


NO_FORECAST_YET = Forecast(reason=TOO_FEW)
"""A session that has not stepped yet."""


@dataclass(eq=False)
class Forecasts:
    """A snapshot's two forecasts (:func:`pass_forecast` and :func:`summary_forecast`),
    made from what it holds the first time one is read, then kept: most sessions of a
    home are never asked (an idle one shows no forecast, a list shows a page of them),
    so taking a snapshot costs no forecast. Its fields are the figures they are made
    from; what is worked out from them is kept beside (no field: a snapshot's
    ``dataclasses.asdict`` is the same whether they were read or not, sealed or not).
    Equal when made from equal figures."""

    measured: int = 0
    """What the steps to come grow from."""
    freeable_now: int = 0
    point: Known = UNKNOWN
    growth: tuple[int, ...] = ()
    times: tuple[int, ...] = ()
    prior: tuple[int, ...] = ()
    added: InitVar[tuple[tuple[Shape, ...], ...]] = ()
    """Beside each of ``growth``, the tool results its step added."""
    cut: InitVar[PruneCut | None] = None
    """What a prune cuts (the likeliest of what is known; ``None``: no pruner): with
    ``added``, each step's net growth (:meth:`net_growth`)."""
    net: InitVar[tuple[int, ...] | None] = None
    """Each step's net growth, when known already (a pickled one's: ``added`` is bigger
    than the rest of a snapshot)."""
    made: InitVar[tuple[Forecast, Forecast] | None] = None
    """Both forecasts, given (a hand-made snapshot's: :meth:`of`)."""

    def __post_init__(
        self,
        added: tuple[tuple[Shape, ...], ...],
        cut: PruneCut | None,
        net: tuple[int, ...] | None,
        made: tuple[Forecast, Forecast] | None,
    ) -> None:
        self._added, self._cut, self._net, self._made = added, cut, net, made
        self._given = made is not None

    @classmethod
    def of(cls, next_pass: Forecast, next_summary: Forecast) -> Forecasts:
        """Forecasts already made (a hand-made snapshot's)."""
        return cls(made=(next_pass, next_summary))

    @property
    def read(self) -> bool:
        """Whether they have been made (read, or given)."""
        return self._made is not None

    @property
    def next_pass(self) -> Forecast:
        return self._forecasts()[0]

    @property
    def next_summary(self) -> Forecast:
        return self._forecasts()[1]

    def _forecasts(self) -> tuple[Forecast, Forecast]:
        made = self._made
        if made is None:
            point, times, prior = self.point, self.times, self.prior
            made = self._made = (
                pass_forecast(
                    measured=self.measured,
                    point=point,
                    growth=self.growth,
                    times=times,
                    prior=prior,
                ),
                summary_forecast(
                    measured=self.measured,
                    freeable_now=self.freeable_now,
                    point=point,
                    net_growth=self.net_growth(),
                    times=times,
                    prior=prior,
                ),
            )
        return made

    def net_growth(self) -> tuple[int, ...]:
        """Each step's growth less what cutting the results it added frees."""
        net = self._net
        if net is None:
            from dshweb.core.fold.pricing import freed

            cut, added = self._cut, self._added
            net = self._net = (
                self.growth
                if cut is None or len(added) != len(self.growth)
                else tuple(
                    g - sum(freed(shape, cut) for shape in step)
                    for g, step in zip(self.growth, added, strict=True)
                )
            )
        return net

    def _figures(self) -> tuple[Any, ...]:
        if self._given:
            return (self._made,)
        return (
            self.measured,
            self.freeable_now,
            self.point,
            self.growth,
            self.net_growth(),
            self.times,
            self.prior,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Forecasts):
            return NotImplemented
        return self._given == other._given and self._figures() == other._figures()

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[Forecasts], tuple[Any, ...]]:
        # The net growth, not the results' shapes; given forecasts, not made ones.
        return Forecasts, (
            self.measured,
            self.freeable_now,
            self.point,
            self.growth,
            self.times,
            self.prior,
            (),
            None,
            self.net_growth(),
            self._made if self._given else None,
        )


NO_FORECASTS = Forecasts.of(NO_FORECAST_YET, NO_FORECAST_YET)
"""A snapshot's before it has stepped."""


def pass_forecast(
    *,
    measured: int,
    point: Known,
    growth: Sequence[int],
    times: Sequence[int] = (),
    now_ms: int | None = None,
    prior: Sequence[int] = (),
) -> Forecast:
    """The next pass of the engine's check, for a session measured at ``measured`` tokens,
    with what is known of its compaction ``point``, per-step ``growth`` (oldest first)
    and step start ``times`` (epoch ms); ``prior``: the per-step growth of this home's
    other sessions on the same model (used before the session has :data:`NEED` steps);
    ``now_ms`` (epoch ms) tells an idle session (:func:`as_of`)."""
    return as_of(_forecast(measured, point, growth, times, prior), times, now_ms)


def summary_forecast(
    *,
    measured: int,
    freeable_now: int,
    point: Known,
    net_growth: Sequence[int],
    times: Sequence[int] = (),
    now_ms: int | None = None,
    prior: Sequence[int] = (),
) -> Forecast:
    """The next summary: :func:`pass_forecast` of the net measure (``measured`` less
    ``freeable_now``, what a prune of every result on the surface now would free) growing
    by ``net_growth`` (each step's growth less what pruning the results it added frees,
    parallel to the pass's growth); ``prior`` is the net growth of the home's other
    sessions on the model. With nothing prunable (the pruner off, or no result over its
    threshold) it is the next pass."""
    return pass_forecast(
        measured=measured - freeable_now,
        point=point,
        growth=net_growth,
        times=times,
        now_ms=now_ms,
        prior=prior,
    )


def _forecast(
    measured: int,
    point: Known,
    growth: Sequence[int],
    times: Sequence[int],
    prior: Sequence[int],
) -> Forecast:
    if point.low is None and point.high is None:
        return Forecast(reason=NO_POINT, point=point)
    history = tuple(float(g) for g in growth)
    pace: _Pace
    source: PaceSource
    if len(history) >= NEED:
        if statistics.median(history[-RECENT:]) <= 0:
            return Forecast(reason=NOT_GROWING, point=point)
        pace, source, drift = _pace(history), "session", DRIFT
    elif len(prior) >= NEED:
        pooled = tuple(float(g) for g in prior)
        if statistics.median(pooled) <= 0:
            return Forecast(reason=NOT_GROWING, point=point)
        pace, source, drift = _home_pace(pooled), "home", HOME_DRIFT
    elif history and history[0] > 0:  # one step of its own, and nothing else to go by
        pace, source, drift = _pace(history), "session", HOME_DRIFT
    else:
        return Forecast(reason=TOO_FEW, point=point)
    if pace.mean <= 0:  # a compaction's shrinking among the steps outweighs their growth
        return Forecast(reason=NOT_GROWING, point=point)
    said = functools.partial(Forecast, per_step=pace.mean, point=point, pace=source)
    low = point.low if point.low is not None else 0
    if point.high is not None and point.high <= measured:  # due at the next step's start
        return said(1, 1, 1, _minutes(1, times))
    # Expected: the point anywhere in its range alike (its middle). The range: the fast
    # steps to its low end, the slow ones to its high end, the point's half-range taken
    # with the pace's spread and drift as independent (in quadrature).
    middle = low if point.high is None else (low + point.high) // 2
    half = 0 if point.high is None else point.high - middle
    left = middle - measured
    steps = _reach(pace, left, 0.5, drift) if left > 0 else 1
    fast = _reach(pace, left, RANGE_QUANTILES[0], drift, middle - low) if low > measured else 1
    slow = (
        None
        if point.high is None
        else max(_reach(pace, left, RANGE_QUANTILES[1], drift, half), steps)
    )
    return said(steps, min(fast, steps), slow, _minutes(steps, times))


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


class _Pooled:
    """Steps of this home's other sessions on the model, taken as alike: ``k`` steps grow
    by ``k`` times their mean, and their spread at ``q`` around it as ``√k``."""

    def __init__(self, values: Sequence[float]) -> None:
        self.ordered = sorted(values)
        self.mean = sum(values) / len(values)

    def grows(self, k: int, q: float) -> float:
        return k * self.mean + (_quantile(self.ordered, q) - self.mean) * math.sqrt(k)


@functools.lru_cache(maxsize=64)
def _home_pace(prior: tuple[float, ...]) -> _Pace:
    """The pace of a home's other sessions on a model (the same for every young session
    of it until they step again)."""
    return _Pooled(prior)


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


def _reach(pace: _Pace, left: float, q: float, widen: float = DRIFT, point: float = 0.0) -> int:
    """The fewest steps whose growth at quantile ``q``, widened by ``widen`` (a share of
    the mean pace: :data:`DRIFT`, :data:`HOME_DRIFT`) and by ``point`` tokens (how far
    the compaction point may lie from the one ``left`` is counted to), covers ``left``."""

    def covers(k: int) -> bool:
        median = pace.grows(k, 0.5)
        if q == 0.5:
            return median >= left
        off, drift = pace.grows(k, q) - median, widen * k * pace.mean
        return median + math.copysign(math.hypot(off, drift, point), q - 0.5) >= left

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
        return Forecast(reason=IDLE, point=forecast.point)
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
