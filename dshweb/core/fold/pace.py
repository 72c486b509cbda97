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

The engine's own decisions bound the compaction point it actually used
(:class:`Decisions`). It checks before every step, in the step's ``agent/pre-step``
hook (``BasicCompactionEngine``'s automatic compaction): ``measure(session).totalTokens``
against the point, *before* ``step/start`` is appended and before the step's system
prompt, user message and runtime-context snapshot are (``step()`` appends those). So the
measure it compared is exactly dshweb's reading of the log as it stood before the
step's ``step/start`` (or before the pre-step's first ``compaction/prune`` or automatic
``compaction/start``, when it acted): every step that started without an automatic
compaction in its pre-step was below the point then (a prune first brings the measure
under it, or the compaction would start), every pre-step's first prune or automatic
compaction was at or above it. A compaction inside a step (an overflow recovery: the
provider refused the step's request as too large) is no such decision: it comes at any
measure; nor is a step that starts after an automatic compaction in its own pre-step (the
engine lets it out even when the compaction left the measure at or past the point), nor
any step after a compaction that failed, until the next one starts.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dshweb.core.fold.compaction import measured_tokens
from dshweb.core.fold.ledger import overflow_pending
from dshweb.core.fold.meter import USAGE_EVENTS, SessionMeter, cache_and_prompt
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

RUNGS = (1, 2, 3, 5, 8, 13, 20)
"""The step counts the line can promise; the last one reads "20+"."""

MAX_SAMPLES = 256
"""The most samples kept (the ``paceSamples`` setting cannot ask for more)."""


@dataclass(frozen=True, slots=True)
class InferredPoint:
    """The range the engine's own decisions allow the compaction point (``None``: no
    decision bounds that side)."""

    low: int | None = None
    high: int | None = None
    decisions: int = 0

    def holds(self, threshold: int) -> bool:
        return (self.low is None or threshold >= self.low) and (
            self.high is None or threshold <= self.high
        )

    def as_json(self) -> dict[str, int | None]:
        return {"low": self.low, "high": self.high, "decisions": self.decisions}


_BETWEEN_STEPS = frozenset({StepEnd, TurnStart, TurnEnd})


@dataclass(slots=True)
class Decisions:
    """The automatic compaction decisions of a log, as bounds on the point; they start
    over when the window or the reserved tokens change (the point moves with them)."""

    passed: int | None = None
    """The highest measure a step started at."""
    folded: int | None = None
    """The lowest measure an automatic fold started at."""
    count: int = 0
    basis: tuple[int | None, int | None] | None = None
    in_step: bool = False
    """Between a ``step/start`` and its ``step/end``: no pressure check happens here."""
    pruned: bool = False
    """The pre-step under way pruned: its compaction, if any, is the same decision."""
    compacted: bool = False
    """The pre-step under way started an automatic compaction: its step says nothing."""
    overflow: bool = False
    """A compaction now would be an overflow recovery (the provider refused the step's
    request as too large): the engine did not decide it by the point."""
    failed: bool = False
    """The last compaction failed: the steps after it start whatever the measure,
    until the engine starts another."""

    def observe(self, event: AnyEvent, meter: SessionMeter) -> None:
        """Look at ``event`` before ``meter`` folds it."""
        kind = type(event)
        data: Any = getattr(event, "data", None)
        overflow, self.overflow = self.overflow, overflow_pending(kind, data, self.overflow)
        if kind is StepStart:
            if not (self.compacted or self.failed):
                self._decided(meter, folded=False)
            self.in_step, self.pruned, self.compacted = True, False, False
        elif kind in _BETWEEN_STEPS:  # the next pre-step begins (a torn step ends too)
            self.in_step, self.pruned, self.compacted = False, False, False
        elif kind is CompactionPrune:
            if not (self.in_step or self.pruned or overflow):
                self._decided(meter, folded=True)
            self.pruned = True
        elif kind is CompactionStart:
            automatic = data is not None and data.turn is not None
            if automatic and not (self.in_step or overflow):
                if not self.pruned:
                    self._decided(meter, folded=True)
                self.compacted = True
            self.overflow = self.failed = False
        elif kind is CompactionEnd:
            self.failed = data is not None and data.error is not None

    def _decided(self, meter: SessionMeter, *, folded: bool) -> None:
        basis = (meter.context_window, meter.reserved_tokens)
        if basis != self.basis:
            self.passed = self.folded = None
            self.count, self.basis = 0, basis
        reading = measured_tokens(meter)
        if folded:
            self.folded = reading if self.folded is None else min(self.folded, reading)
        else:
            self.passed = reading if self.passed is None else max(self.passed, reading)
        self.count += 1
        if self.passed is not None and self.folded is not None and self.passed >= self.folded:
            # No one point does both: it moved (a profile changed under the session).
            # The decision just made is the first under the new one.
            self.passed, self.folded = (None, reading) if folded else (reading, None)
            self.count = 1

    @property
    def inferred(self) -> InferredPoint:
        low = self.passed + 1 if self.passed is not None else None
        return InferredPoint(low, self.folded, self.count)


@dataclass(slots=True)
class PaceCollector:
    """Fold-side state: the samples since the last re-base and the last step's reading."""

    deltas: list[int] = field(default_factory=list)
    last: tuple[object, object, int] | None = None
    """``(turn, step, reading)`` of the last step boundary seen."""
    growth: list[int] = field(default_factory=list)
    """Every step's growth, folds or not (a re-basing delta is left out, not a reason to
    start over): the fold forecast's samples (:mod:`dshweb.core.fold.forecast`)."""
    times: list[int] = field(default_factory=list)
    """The event time (epoch ms) of each step boundary, the last :data:`MAX_SAMPLES`."""
    cache: list[tuple[int, int]] = field(default_factory=list)
    """At each step boundary, the cache-read and prompt tokens of every request before it
    (``tokenUsage``'s running sums), the last :data:`MAX_SAMPLES`: the cache-hit ratio of
    any recent run of steps is a difference of two."""
    decisions: Decisions = field(default_factory=Decisions)

    def observe(self, event: AnyEvent, meter: SessionMeter) -> None:
        """Look at ``event`` before ``meter`` folds it."""
        self.decisions.observe(event, meter)
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
                self.growth.append(delta)
                del self.growth[:-MAX_SAMPLES]
        if isinstance(event.time, int) and not isinstance(event.time, bool):
            self.times.append(event.time)
            del self.times[:-MAX_SAMPLES]
        self.cache.append(cache_and_prompt(meter.token_usage_view()))
        del self.cache[:-MAX_SAMPLES]
        self.last = (turn, step, reading)

    @property
    def samples(self) -> tuple[int, ...]:
        return tuple(self.deltas)


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
