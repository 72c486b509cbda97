"""The compaction point a session goes by: the profile's, or the one the engine's own
decisions in the log allow; and the band at each step boundary against it. One rule,
read by the pages, the API, ``/metrics``, the exports and ``dsh_snapshot`` alike.

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

:func:`point_known` is what the forecasts and the preview go by: the profile's point while
the decisions allow it, else the range they allow, its high end held, before any pass
bounds it, by the engine's own rule: never one value picked from inside a range.
:func:`threshold_source` and :func:`effective_threshold` choose one figure for the band
and the ring (the range's middle); :class:`StepBand` holds the band from one step
boundary to the next with dsh-context-truth's hysteresis, against the point in force at
each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dshweb.core.fold.compaction import CompactionPoint, compaction_point, measured_tokens
from dshweb.core.fold.gauge import Band, context_band
from dshweb.core.fold.known import UNKNOWN, Known
from dshweb.core.fold.ledger import overflow_pending
from dshweb.core.fold.meter import SessionMeter
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
from dshweb.core.profile.effective import DEFAULT_RULE, BandRule, EngineConfig


@dataclass(frozen=True, slots=True)
class Basis:
    """What the engine resolves its compaction settings for: DSH takes a model's own
    policy where the profile gives one (``modelPolicies``, by provider and model), and
    scales it by the model's window and the completion a request reserves."""

    model: str | None
    window: int | None
    reserved: int


def basis_of(meter: SessionMeter) -> Basis:
    """The basis the session's next check goes by (the model, window and reserve the log
    says now)."""
    return Basis(meter.model, meter.context_window, meter.reserved_tokens)


EARLIER_BASES = 16
"""The other bases whose decisions are kept (a session that goes back to a model finds
what its decisions there showed)."""


@dataclass(frozen=True, slots=True)
class InferredPoint:
    """The range the engine's own decisions allow the compaction point (``None``: no
    decision bounds that side)."""

    low: int | None = None
    high: int | None = None
    decisions: int = 0
    basis: Basis | None = field(default=None, compare=False)
    """The model, window and reserve the decisions were made under (the point moves with
    them)."""

    def holds(self, threshold: int) -> bool:
        return (self.low is None or threshold >= self.low) and (
            self.high is None or threshold <= self.high
        )

    def as_json(self) -> dict[str, int | None]:
        return {"low": self.low, "high": self.high, "decisions": self.decisions}


BETWEEN_STEPS = frozenset({StepEnd, TurnStart, TurnEnd})


@dataclass(slots=True)
class Decisions:
    """The automatic compaction decisions of a log, as bounds on the point; they start
    over when the model, the window or the reserved tokens change (the point moves with
    them), and come back with a basis the session returns to."""

    passed: int | None = None
    """The highest measure a step started at."""
    acted: int | None = None
    """The lowest measure an automatic pass started at (the engine's check acted)."""
    count: int = 0
    basis: Basis | None = None
    earlier: dict[Basis, tuple[int | None, int | None, int]] = field(default_factory=dict)
    """``(passed, acted, count)`` under each other basis (the last :data:`EARLIER_BASES`)."""
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
                self._decided(meter, acted=False)
            self.in_step, self.pruned, self.compacted = True, False, False
        elif kind in BETWEEN_STEPS:  # the next pre-step begins (a torn step ends too)
            self.in_step, self.pruned, self.compacted = False, False, False
        elif kind is CompactionPrune:
            if not (self.in_step or self.pruned or overflow):
                self._decided(meter, acted=True)
            self.pruned = True
        elif kind is CompactionStart:
            automatic = data is not None and data.turn is not None
            if automatic and not (self.in_step or overflow):
                if not self.pruned:
                    self._decided(meter, acted=True)
                self.compacted = True
            self.overflow = self.failed = False
        elif kind is CompactionEnd:
            self.failed = data is not None and data.error is not None

    def _decided(self, meter: SessionMeter, *, acted: bool) -> None:
        basis = basis_of(meter)
        if basis != self.basis:
            if self.basis is not None:
                self.earlier[self.basis] = (self.passed, self.acted, self.count)
                while len(self.earlier) > EARLIER_BASES:
                    del self.earlier[next(iter(self.earlier))]
            self.passed, self.acted, self.count = self.earlier.pop(basis, (None, None, 0))
            self.basis = basis
        reading = measured_tokens(meter)
        if acted:
            self.acted = reading if self.acted is None else min(self.acted, reading)
        else:
            self.passed = reading if self.passed is None else max(self.passed, reading)
        self.count += 1
        if self.passed is not None and self.acted is not None and self.passed >= self.acted:
            # No one point does both: it moved (a profile changed under the session).
            # The decision just made is the first under the new one.
            self.passed, self.acted = (None, reading) if acted else (reading, None)
            self.count = 1

    @property
    def inferred(self) -> InferredPoint:
        """The range the decisions under the last basis allow."""
        return _inferred(self.passed, self.acted, self.count, self.basis)

    def at(self, basis: Basis) -> InferredPoint:
        """The range the decisions allow under ``basis``: those made under it (the last
        ones, or earlier ones the session has come back to), else the last ones, made
        under another (:func:`point_known` says what they leave known)."""
        if basis != self.basis and basis in self.earlier:
            return _inferred(*self.earlier[basis], basis)
        return self.inferred


def _inferred(
    passed: int | None, acted: int | None, count: int, basis: Basis | None
) -> InferredPoint:
    return InferredPoint(passed + 1 if passed is not None else None, acted, count, basis)


def threshold_source(point: CompactionPoint | None, inferred: InferredPoint) -> str | None:
    """Which compaction point a session goes by: the profile's (``profile``) unless the
    engine's decisions rule it out or it has none (``inferred``, when they bound it)."""
    configured = point.threshold_tokens if point is not None else None
    if configured is not None and inferred.holds(configured):
        return "profile"
    if inferred.low is not None or inferred.high is not None:
        return "inferred"
    return "profile" if configured is not None else None


def effective_threshold(point: CompactionPoint | None, inferred: InferredPoint) -> int | None:
    """The point of :func:`threshold_source` as one figure, for the band and the ring: the
    profile's, or the middle of the range the decisions allow once a pass bounds it from
    above (before the first pass, the requests let out only say how low it is not: no
    figure to draw). The forecasts go by the whole range instead (:func:`point_known`)."""
    source = threshold_source(point, inferred)
    if source == "profile":
        return point.threshold_tokens if point is not None else None
    low, high = inferred.low, inferred.high
    if source is None or high is None:
        return None
    return (low + high) // 2 if low is not None else high


def point_known(
    point: CompactionPoint | None, inferred: InferredPoint, meter: SessionMeter
) -> Known:
    """The compaction point as a range with its source: the profile's while the
    engine's decisions allow it; else the range they allow, bounded above before the
    first pass by the engine's own rule (the point is at most the window less the
    reserved completion: ``min(window × thresholdRatio, window − reserved − headroom)``
    with a ratio of at most 1 and a headroom of at least 0)."""
    configured = point.threshold_tokens if point is not None else None
    basis = inferred.basis
    if basis is not None and basis != basis_of(meter):
        if basis.window is None:  # decided before the log recorded any window: no bound
            inferred = InferredPoint()
        else:
            # Decided under another basis (the log records a new one at the first
            # request after a model switch, and the engine's next check goes by it).
            budget = None
            if meter.context_window is not None:
                budget = max(0, meter.context_window - meter.reserved_tokens)
            return Known(None, budget, "unknown")
    if configured is not None and inferred.holds(configured):
        return Known.exactly(configured, "profile")
    if inferred.low is not None or inferred.high is not None:
        high = inferred.high
        if high is None and meter.context_window is not None:
            high = meter.context_window - meter.reserved_tokens
        low = inferred.low
        if high is not None and high < (low or 0):  # a log the engine could not write
            high = None
        return Known(low, high, "inferred")
    return Known.exactly(configured, "profile") if configured is not None else UNKNOWN


def point_of(meter: SessionMeter, engine: EngineConfig | None) -> CompactionPoint | None:
    """The profile's compaction point for the window and reserve the log says now."""
    if meter.context_window is None or engine is None:
        return None
    return compaction_point(
        context_window=meter.context_window, reserved=meter.reserved_tokens, engine=engine
    )


def used_tokens(meter: SessionMeter) -> int | None:
    """What DSH's own ring shows: ``projectedTokens ?? pressureTokens``."""
    projected = meter.projected_tokens
    return projected if projected is not None else meter.pressure_tokens


@dataclass(slots=True)
class StepBand:
    """The band at each step boundary (``step/end``), held against the one before it
    with the plugin's hysteresis (:func:`~dshweb.core.fold.gauge.settle_band`), against
    the point in force then (:func:`effective_threshold` of the decisions so far)."""

    band: Band | None = None

    def step_end(
        self,
        meter: SessionMeter,
        decisions: Decisions,
        engine: EngineConfig | None,
        rule: BandRule = DEFAULT_RULE,
    ) -> tuple[int | None, Band]:
        """The point and the band at the ``step/end`` just folded into ``meter``."""
        threshold = effective_threshold(point_of(meter, engine), decisions.at(basis_of(meter)))
        self.band = context_band(used_tokens(meter), threshold, self.band, rule)
        return threshold, self.band
