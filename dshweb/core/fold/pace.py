"""A session's per-step growth, as dsh-context-truth's pace estimate measures it.

The plugin reads ``measure(session).totalTokens`` when it renders the line for a step and
keys the reading by the host's ``(turn, step)``; the deltas between consecutive step
boundaries are its samples, and a negative delta (a fold or a prune re-based the reading)
clears them instead of being averaged in. :class:`PaceCollector` rebuilds those samples
from a log as dshweb folds it: it takes the reading just before the first usage-bearing
event of each ``(turn, step)`` (the moment the step's request went out), so it must see
each event *before* the meter folds it. That reading includes the runtime-context
snapshot committed for the step, which the plugin's own reading precedes by a few dozen
tokens; the median absorbs that.

The estimate itself: the median of the last ``keep`` samples, once at least ``need`` exist;
the headroom divided by it, bucketed onto :data:`RUNGS` rounded down, and settled against
the rung shown before: downward at once, upward only past ``margin`` above the new rung.

The engine's own decisions, which bound the compaction point it went by, are read at the
same time (:class:`~dshweb.core.fold.point.Decisions`), and so is what each step grew the
measure the engine checks by (:class:`CheckGrowth`): the fold forecast's samples.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from dshweb.core.fold.compaction import measured_tokens
from dshweb.core.fold.meter import USAGE_EVENTS, SessionMeter
from dshweb.core.fold.point import BETWEEN_STEPS, Decisions
from dshweb.core.fold.pricing import Shape
from dshweb.core.fold.revealed import Revealed
from dshweb.core.log.wire import (
    AnyEvent,
    AssistantMessage,
    CompactionPrune,
    CompactionStart,
    StepStart,
)

RUNGS = (1, 2, 3, 5, 8, 13, 20)
"""The step counts the line can promise; the last one reads "20+"."""

MAX_SAMPLES = 256
"""The most samples kept (the ``paceSamples`` setting cannot ask for more)."""


_FOLDS = (CompactionPrune, CompactionStart)


@dataclass(slots=True)
class CheckGrowth:
    """What each step grew the measure the engine checks by (DSH_FACTS §7; where in the
    step it checks: :mod:`dshweb.core.fold.point`): from the reading just before one
    ``step/start`` to the reading the next pre-step checked, which is before its first
    ``compaction/prune`` or ``compaction/start`` when it folded. So the step that crossed
    the point counts with all it added (a big tool result among small steps), though the
    fold took the measure back down before the next step started. A step whose reading
    fell is left out (the first after a compaction, when the provider's count of the new
    context re-anchors the measure; one with a compaction inside it, when the provider
    refused its request). The log's first step counts from what its request sent (the
    reading just before its first ``assistant/message``): what it sent is sent once, the
    session's system prompt, its tools and its runtime context, and what it added after
    is a step's growth like any other's, so a session's pace is measured from its second
    step on."""

    growth: list[int] = field(default_factory=list)
    """The last :data:`MAX_SAMPLES` steps' growth, oldest first."""
    started: int | None = None
    """The reading the last step started at."""
    checked: int | None = None
    """The reading the pre-step under way checked, when it folded."""
    added: list[tuple[Shape, ...]] = field(default_factory=list)
    """Beside each of ``growth``, the shapes of the tool results its step added: what
    a prune would take back of its growth (the summary forecast's net growth)."""
    in_step: bool = False
    steps: int = 0
    """The steps started so far."""
    sent: int | None = None
    """The reading the log's first step's request sent (its growth counts from there)."""

    def base(self, measured: int) -> int:
        """What the steps still to come grow from, measured at ``measured`` now: inside a
        step, the reading it started at (its own growth is one of them)."""
        return self.started if self.in_step and self.started is not None else measured

    def observe(self, event: AnyEvent, meter: SessionMeter) -> None:
        """Look at ``event`` before ``meter`` folds it."""
        kind = type(event)
        if kind is StepStart:
            reading = measured_tokens(meter)
            checked = self.checked if self.checked is not None else reading
            added = tuple(meter.results_added)
            meter.results_added.clear()
            started = self.sent if self.steps == 1 else self.started
            if started is not None and checked >= started:
                self.growth.append(checked - started)
                self.added.append(added)
                del self.growth[:-MAX_SAMPLES], self.added[:-MAX_SAMPLES]
            self.started, self.checked, self.in_step = reading, None, True
            self.steps += 1
        elif kind in BETWEEN_STEPS:
            self.in_step = False
        elif self.checked is None and not self.in_step and kind in _FOLDS:
            self.checked = measured_tokens(meter)  # the pre-step's first fold: its check
        elif kind is AssistantMessage and self.steps == 1 and self.sent is None:
            self.sent = measured_tokens(meter)  # what the log's first step sent


@dataclass(slots=True)
class PaceCollector:
    """Fold-side state: the samples since the last re-base and the last step's reading."""

    deltas: list[int] = field(default_factory=list)
    last: tuple[object, object, int] | None = None
    """``(turn, step, reading)`` of the last step boundary seen."""
    checks: CheckGrowth = field(default_factory=CheckGrowth)
    """Every step's growth as the engine's check sees it: the fold forecast's samples."""
    times: list[int] = field(default_factory=list)
    """The event time (epoch ms) of each step boundary, the last :data:`MAX_SAMPLES`."""
    cache: list[tuple[int, int]] = field(default_factory=list)
    """At each step boundary, the cache-read and prompt tokens of every request before it
    (``tokenUsage``'s running sums), the last :data:`MAX_SAMPLES`: the cache-hit ratio of
    any recent run of steps is a difference of two."""
    decisions: Decisions = field(default_factory=Decisions)
    revealed: Revealed = field(default_factory=Revealed.new)
    """What the engine's acts show of its retain and the pruner's cut."""

    def observe(self, event: AnyEvent, meter: SessionMeter) -> None:
        """Look at ``event`` before ``meter`` folds it."""
        self.revealed.observe(event, meter, overflow=self.decisions.overflow)
        self.decisions.observe(event, meter)
        self.checks.observe(event, meter)
        if type(event) not in USAGE_EVENTS:
            return
        data = event.data  # type: ignore[union-attr]
        if data is None:
            return
        turn, step = data.turn, data.step
        if not isinstance(turn, int) or not isinstance(step, int):
            return
        last = self.last
        if last is not None and (last[0], last[1]) == (turn, step):
            return
        reading = measured_tokens(meter)
        if last is not None:
            delta = reading - last[2]
            if delta < 0:
                self.deltas.clear()
            else:
                self.deltas.append(delta)
                del self.deltas[:-MAX_SAMPLES]
        if isinstance(event.time, int) and not isinstance(event.time, bool):
            self.times.append(event.time)
            del self.times[:-MAX_SAMPLES]
        totals = meter.totals  # cache_and_prompt(meter.token_usage_view()), without the dict
        self.cache.append((totals[2], totals[0] + totals[2] + totals[3]))
        del self.cache[:-MAX_SAMPLES]
        self.last = (turn, step, reading)

    @property
    def samples(self) -> tuple[int, ...]:
        return tuple(self.deltas)

    @property
    def growth(self) -> list[int]:
        return self.checks.growth


def pace_samples(events: Iterable[AnyEvent]) -> tuple[int, ...]:
    """The samples of a whole log's events, folded from scratch."""
    meter, collector = SessionMeter(), PaceCollector()
    for event in events:
        collector.observe(event, meter)
        meter.fold(event)
    return collector.samples


@dataclass(frozen=True, slots=True)
class PaceEstimate:
    median: float
    """Median per-step growth over the samples used, in tokens."""
    samples: int
    steps: float
    """``headroom / median``, before bucketing."""
    rung: int
    """The rung shown, after settling against the previous one."""

    @property
    def label(self) -> str:
        return f"{self.rung}+" if self.rung >= RUNGS[-1] else str(self.rung)


def rung_below(steps: float) -> int | None:
    """The highest rung not above ``steps``; ``None`` under one step."""
    found = None
    for rung in RUNGS:
        if steps >= rung:
            found = rung
    return found


def settle_rung(steps: float, previous: int | None, margin: float) -> int | None:
    """Downward at once; upward only to a rung ``steps`` clears by ``margin``."""
    raw = rung_below(steps)
    if raw is None or previous is None or raw <= previous:
        return raw
    settled = previous
    for rung in RUNGS:
        if previous < rung <= raw and steps >= rung * (1 + margin):
            settled = rung
    return settled


def pace_estimate(
    *,
    headroom: int,
    samples: Sequence[int],
    keep: int,
    need: int,
    margin: float,
    previous: int | None,
) -> PaceEstimate | None:
    """The estimate for ``headroom`` tokens, or ``None`` when there is nothing honest to say."""
    recent = list(samples[-keep:]) if keep > 0 else []
    if len(recent) < max(1, need):
        return None
    median = float(statistics.median(recent))
    if median <= 0:
        return None
    steps = headroom / median
    rung = settle_rung(steps, previous, margin)
    if rung is None:
        return None
    return PaceEstimate(median=median, samples=len(recent), steps=steps, rung=rung)
