"""What other compaction and pruner settings would have done to a session: its recorded
growth replayed under them, by the engine's own rules (DSH_FACTS §7).

:func:`record` reads a log once into a :class:`Recording`: for each of the engine's checks
(one before every step, before ``step/start``) the surface nodes appended since the one
before (the step's system prompt, user message, runtime context, answer and tool results:
everything the session added, whatever its compactions then did), the window, the reserved
completion and the tool schemas' price then; and where the engine's check really acted.

:func:`replay` runs those checks again on a surface of its own. At each, the measure is
what the engine measured then, moved by what the replay's surface holds more or less than
the session's did (by DSH's heuristic), at the rate the provider counted this session's
tokens against the heuristic (:attr:`Recording.slope`; the measure re-bases on the
provider's count after every answer): where the replay has compacted as the session did, it
is exactly the engine's. At or past the point, the pruner (when it runs) cuts every tool
result longer than its cut's threshold (the profile's, or one to try: each node keeps its
shape), then, still at or past it, a compaction shadows the range
:func:`~dshweb.core.fold.preview.select_range` gives and puts a summary in its place, up to
:data:`ATTEMPTS` times while the measure stays at or past the point. A summary's size is an
estimate: the median of the session's own (or :data:`SUMMARY_GUESS` before it has one); a
compaction whose summary would not be smaller than what it shadows fails, as the engine's
does, and the next check tries again. A request the provider refused as too large is
answered where it came, as the engine did (prune, compact keeping nothing).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from dshweb.core.fold.compaction import compaction_point, measured_tokens
from dshweb.core.fold.meter import SessionMeter, SurfaceNode
from dshweb.core.fold.point import BETWEEN_STEPS
from dshweb.core.fold.preview import select_range
from dshweb.core.fold.pricing import DEFAULT_CUT, PruneCut, pruned_price
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import LogTail
from dshweb.core.log.wire import (
    SURFACE,
    AnyEvent,
    CompactionPrune,
    CompactionStart,
    CompactionSummary,
    StepStart,
)
from dshweb.core.profile.effective import EngineConfig

ATTEMPTS = 2
"""Compactions one check may run (``compactionRetries`` 1, the engine's default, + 1)."""
SUMMARY_GUESS = 600
"""A summary's price before the session has one of its own (an estimate)."""
_SURFACE = frozenset(SURFACE)

ReplayKind = Literal["prune", "compaction", "failed"]


@dataclass(frozen=True, slots=True)
class Check:
    """One of the engine's checks, before a step."""

    added: tuple[SurfaceNode, ...]
    """The nodes appended since the check before."""
    window: int | None
    reserved: int
    tools: int
    measured: int = 0
    """What the engine's check measured (re-based on the provider's own count; before
    its pass, when it acted)."""
    estimate: int = 0
    """The tool schemas and the surface it measured, by DSH's heuristic."""
    overflow: int | None = None
    """The step before it was refused by the provider as too large and the engine
    compacted inside it (keeping nothing) once this many of ``added`` were on the
    surface: the provider's doing, replayed where it came."""


@dataclass(frozen=True, slots=True)
class Recording:
    """A session's growth, check by check, and what the engine really did."""

    checks: tuple[Check, ...] = ()
    acted: tuple[int, ...] = ()
    """The checks at which the engine acted (its passes): pruned, or started a
    compaction (whether or not its summary then failed)."""
    summaries: tuple[int, ...] = ()
    """The prices of the session's own summaries."""

    @property
    def slope(self) -> float:
        """How many tokens the provider counts for each of DSH's heuristic on this session:
        what the measure grew by over what the estimate grew by, from each check to the
        next where the engine did not act (the measure re-bases on the provider's count
        after every answer); 1 when it never grew."""
        acted = set(self.acted)
        grew = counted = 0
        for index in range(1, len(self.checks)):
            earlier, later = self.checks[index - 1], self.checks[index]
            if index - 1 in acted or not (earlier.measured and later.measured):
                continue
            grew += later.measured - earlier.measured
            counted += later.estimate - earlier.estimate
        return grew / counted if counted > 0 and grew > 0 else 1.0

    @property
    def summary(self) -> int:
        """The estimated price of a summary: the median of the session's own."""
        return int(statistics.median(self.summaries)) if self.summaries else SUMMARY_GUESS


def record_log(log: LogFile) -> Recording:
    """:func:`record` of the log at ``log``, read whole."""
    events: list[AnyEvent] = []
    LogTail(log.path, log.compressed).read(events.append, events.clear)
    return record(events)


def _automatic(event: AnyEvent) -> bool:
    """A pre-step's prune or automatic compaction: the engine's check acted."""
    if isinstance(event, CompactionPrune):
        return True
    data = event.data if isinstance(event, CompactionStart) else None
    return data is not None and data.turn is not None


def record(events: Iterable[AnyEvent]) -> Recording:
    """Read a session's events into a :class:`Recording`."""
    meter = SessionMeter()
    checks: list[Check] = []
    acted: list[int] = []
    summaries: list[int] = []
    added: list[SurfaceNode] = []
    in_step = summarised = False
    overflow: int | None = None
    checked: tuple[int, int] | None = None  # the pre-step's reading, when it acted
    for event in events:
        kind = type(event)
        if kind is StepStart:
            if checked is not None:
                acted.append(len(checks))
            measured, estimate = checked or (
                measured_tokens(meter),
                meter.tools_tokens + meter.nodes_tokens,
            )
            window, tools = meter.context_window, meter.tools_tokens
            reserved = meter.reserved_tokens
            checks.append(
                Check(tuple(added), window, reserved, tools, measured, estimate, overflow)
            )
            added, in_step, checked, overflow = [], True, None, None
        elif kind in BETWEEN_STEPS:
            in_step = False
        elif _automatic(event) and isinstance(event, CompactionStart) and in_step:
            overflow = len(added)
        elif checked is None and not in_step and _automatic(event):
            checked = (measured_tokens(meter), meter.tools_tokens + meter.nodes_tokens)
        count = len(meter.nodes)
        meter.fold(event)
        if kind is CompactionSummary:
            summarised = True
        elif kind in _SURFACE:
            op = getattr(event, "surface_op", None)
            if op == "append" and len(meter.nodes) > count:
                added.append(meter.nodes[-1])
            elif op is not None and summarised:  # the summary, in the range's place
                summaries.append(meter.last_price)
                summarised = False
    return Recording(tuple(checks), tuple(acted), tuple(summaries))


@dataclass(frozen=True, slots=True)
class ReplayedPass:
    """One check of the replay that acted: its prunes, its summaries (or its failed one)."""

    check: int
    """The check (the step it came before, from 0)."""
    kind: ReplayKind
    before: int
    after: int
    shadowed: int = 0
    """What its compactions shadowed (what the summariser reads)."""
    summary: int = 0
    """What their summaries cost, estimated (what the summariser writes)."""


@dataclass(frozen=True, slots=True)
class Replayed:
    """What the settings would have done."""

    passes: tuple[ReplayedPass, ...] = ()
    peak: int = 0
    lowest: int | None = None
    """The lowest measure from the first pass on, right after a pass or at a check
    (``None``: no pass)."""
    summary_input: int = 0
    """What the summaries would have read: the ranges they shadowed."""
    summary_output: int = 0
    """What they would have written (the estimated summaries)."""
    threshold: int | None = None

    @property
    def automatic(self) -> tuple[int, ...]:
        """The checks at which the engine would act: prune, compact, or try to and fail
        (as :attr:`Recording.acted` counts the session's own)."""
        return tuple(f.check for f in self.passes)


@dataclass(slots=True)
class _Surface:
    nodes: list[SurfaceNode] = field(default_factory=list)
    tokens: int = 0
    open_calls: int = 0
    prunable: set[int] = field(default_factory=set)
    """Indexes in ``nodes`` the pruner would cut."""
    cut: PruneCut = DEFAULT_CUT
    """The pruner's cut (when it runs)."""

    def add(self, node: SurfaceNode) -> None:
        if node.shape is not None and pruned_price(node.shape, self.cut) is not None:
            self.prunable.add(len(self.nodes))
        self.nodes.append(node)
        self.tokens += node.tokens
        self.open_calls += node.calls

    def prune(self) -> int:
        freed = 0
        for index in sorted(self.prunable):
            node = self.nodes[index]
            after = pruned_price(node.shape, self.cut) if node.shape is not None else None
            if after is not None:
                freed += node.tokens - after
                self.nodes[index] = replace(node, tokens=after, shape=None)
        self.prunable.clear()
        self.tokens -= freed
        return freed

    def compact(self, retain: int, summary: int) -> int | None:
        """Shadow the range keeping ``retain``: the tokens shadowed, ``None`` when there is
        no range, ``0`` when the summary would not be smaller (the compaction fails)."""
        found = select_range(self.nodes, self.open_calls, retain)
        if found is None:
            return None
        shadowed = found.shadowed(self.nodes, self.tokens)
        if summary >= shadowed:
            return 0
        checkpoint = SurfaceNode(-1, "user/message", summary, "")
        self.nodes[found.first : found.keep] = [checkpoint]
        self.prunable = {
            i - (found.keep - found.first) + 1 for i in self.prunable if i >= found.keep
        }
        self.tokens += summary - shadowed
        return shadowed


def _overflow(surface: _Surface, pruner: bool, summary: int) -> None:
    """The engine's answer to a request the provider refused as too large: prune, then
    compact keeping nothing."""
    if pruner:
        surface.prune()
    surface.compact(0, summary)


def _pass_at(
    surface: _Surface,
    index: int,
    measure: int,
    threshold: int,
    retain: int,
    pruner: bool,
    summary: int,
) -> ReplayedPass | None:
    """What the engine's check ``index`` does at ``measure``, at or past the point."""
    before, pruned = measure, pruner and bool(surface.prunable)
    if pruned:
        measure -= surface.prune()  # re-measured before the provider counts again
        if measure < threshold:
            return ReplayedPass(index, "prune", before, measure)
    shadowed_all = written = tried = 0
    for _ in range(ATTEMPTS):
        shadowed = surface.compact(retain, summary)
        if shadowed is None:  # nothing to shadow: no compaction starts
            break
        tried += 1
        if not shadowed:  # the summary would not be smaller: it fails
            break
        shadowed_all, written = shadowed_all + shadowed, written + summary
        measure -= shadowed - summary
        if measure < threshold:
            break
    if tried:
        kind: ReplayKind = "compaction" if shadowed_all else "failed"
        return ReplayedPass(index, kind, before, measure, shadowed_all, written)
    return ReplayedPass(index, "prune", before, measure) if pruned else None


def replay(
    recording: Recording,
    engine: EngineConfig,
    *,
    pruner: PruneCut | None = DEFAULT_CUT,
    summary: int | None = None,
) -> Replayed:
    """``recording`` replayed under ``engine`` and the pruner cutting at ``pruner``
    (``None``: off; ``summary``: a summary's price, else the session's own median)."""
    size = recording.summary if summary is None else summary
    slope = recording.slope
    surface = _Surface(cut=pruner or DEFAULT_CUT)
    runs = pruner is not None
    passes: list[ReplayedPass] = []
    peak, lowest, read, written, threshold = 0, None, 0, 0, None
    for index, check in enumerate(recording.checks):
        for at, node in enumerate(check.added):
            if at == check.overflow:
                _overflow(surface, runs, size)
            surface.add(node)
        if check.overflow is not None and check.overflow >= len(check.added):
            _overflow(surface, runs, size)
        # What the engine measured then, moved by what this replay's surface holds more or
        # less than the session's did, at the session's own provider-to-heuristic rate.
        estimate = check.tools + surface.tokens
        measure = check.measured + round(slope * (estimate - check.estimate))
        peak = max(peak, measure)
        if passes:
            lowest = measure if lowest is None else min(lowest, measure)
        if check.window is None:
            continue
        point = compaction_point(
            context_window=check.window, reserved=check.reserved, engine=engine
        )
        threshold = point.threshold_tokens
        if threshold is None or measure < threshold:
            continue
        made = _pass_at(surface, index, measure, threshold, point.retain_tokens, runs, size)
        if made is not None:
            passes.append(made)
            read, written = read + made.shadowed, written + made.summary
    afters = [f.after for f in passes]
    if afters:
        lowest = min(afters) if lowest is None else min(lowest, *afters)
    return Replayed(tuple(passes), peak, lowest, read, written, threshold)
