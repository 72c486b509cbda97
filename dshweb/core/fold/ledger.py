"""The compaction ledger: every compaction of a session's context, and its pressure step
by step.

A *compaction* is one thing that shrank the surface (DSH_FACTS §7):

- a summary: ``compaction/start`` … ``compaction/summary`` + the replacing checkpoint
  … ``compaction/end`` (with ``error`` and usually no summary when it failed). It is
  *manual* when its ``turn`` is null (``/compact``; its ``sourceCommandId`` names the
  ``command/run``, whose ``command/done`` comes after the end), *overflow* when the
  provider had just refused the step's request as too large for the window (DSH logs a
  failed ``assistant/attempt`` whose finish reason carries ``CONTEXT_WINDOW_EXCEEDED``,
  then compacts inside the same step before retrying), else *automatic* (the pressure
  check before a step);
- a prune pass of the tool-result pruner: consecutive ``compaction/prune`` events, each
  with its replacing ``tool/result``, and nothing between them that starts a step or
  adds to the surface.

Each compaction is recorded as a :class:`~dshweb.core.fold.compactions.Compaction`, and a
``/compact`` that compacted nothing as a :class:`~dshweb.core.fold.compactions.CompactCommand`.

:class:`LedgerCollector` is fold-side state, fed each event right *after* the meter
folds it: a few numbers per compaction, and the pressure after each usage-bearing event as
``(seq, time, tokens)``, thinned to at most :data:`MAX_STEP_POINTS` by doubling a stride
(every compaction's before and after points are kept besides). Its state depends only on
the events folded, never on how they were batched, so a log folded in pieces gives the
same ledger. It keeps the newest :data:`MAX_COMPACTIONS` compactions and
:data:`MAX_REFUSED` refused commands one by one and counts the older ones
(:class:`~dshweb.core.fold.compactions.CompactionTally`), so a session of a year costs what
a session of a day does; compaction numbers go on from the first compaction ever.
:meth:`LedgerCollector.result` freezes it into a :class:`Ledger`: its compactions, its
refused commands and its step readings, plain values, whose timeline points
:attr:`Ledger.points` makes when asked. Laying them out (the chart, the
pages, the downloads) is the dashboard's (:mod:`dshweb.sessions.display`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeVar

from dshweb.core.fold.billing import Slot, slot_of
from dshweb.core.fold.compactions import (
    CompactCommand,
    Compaction,
    CompactionKind,
    CompactionTally,
    TimelinePoint,
)
from dshweb.core.fold.cost import CompactionCost, CompactionSpend, summary_route
from dshweb.core.fold.meter import USAGE_EVENTS, SessionMeter, stream_chunks, to_usage
from dshweb.core.fold.preview import previewed
from dshweb.core.log.wire import (
    SURFACE,
    AnyEvent,
    AssistantMessage,
    CommandData,
    CommandDone,
    CommandRun,
    CompactionData,
    CompactionEnd,
    CompactionPrune,
    CompactionStart,
    CompactionSummary,
    EndSeed,
    Replace,
    ShadowData,
    StepEnd,
    StepStart,
    SurfaceData,
    ToolCall,
    TurnEnd,
    TurnStart,
)

Step = tuple[int, int | None, int]
"""One reading of the projected tokens: (seq, time, tokens)."""

MAX_STEP_POINTS = 240
"""The most step points kept; past it every other one is dropped and the stride doubles."""
MAX_COMPACTIONS = 500
"""The newest compactions kept one by one (the ledger's pages and downloads); older ones are
counted in :attr:`Ledger.earlier`."""
MAX_REFUSED = 100
"""The newest refused ``/compact`` commands kept; older ones are counted."""
MAX_PENDING_COMMANDS = 64
"""``command/run`` events waiting for their ``command/done`` kept (the oldest let go)."""

CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
"""The failure code of a request the provider refused as too large for the window."""

_SURFACE = frozenset(SURFACE)
_OVERFLOW_FORGOTTEN = frozenset({StepStart, TurnStart, TurnEnd, EndSeed})
_PASS_ENDS = USAGE_EVENTS | frozenset(
    {
        StepStart,
        StepEnd,
        TurnStart,
        TurnEnd,
        ToolCall,
        CompactionStart,
        CompactionEnd,
        CommandRun,
        EndSeed,
    }
)


@dataclass(frozen=True, slots=True)
class Ledger:
    """The session's compactions, and the one count of them: how many summaries, failed
    summaries, prune passes and pruned results every page and the CLI show."""

    compactions: tuple[Compaction, ...] = ()
    """The newest :data:`MAX_COMPACTIONS` compactions, oldest first."""
    refused: tuple[CompactCommand, ...] = ()
    steps: tuple[Step, ...] = ()
    """The pressure after each step kept (:data:`MAX_STEP_POINTS` at most)."""
    now: Step | None = None
    """The pressure as of the last event folded."""
    threshold: int | None = None
    """The compaction point drawn on the timeline (today's, not the one each compaction
    met)."""
    earlier: CompactionTally = field(default_factory=CompactionTally)
    """The compactions older than those kept, counted."""
    refused_earlier: int = 0
    """Refused commands older than those kept."""
    spend: CompactionSpend = field(default_factory=CompactionSpend)
    """Every compaction's rewrite and saving, added up (kept or counted)."""

    @property
    def first(self) -> int:
        """The number of the oldest compaction kept (numbers count from the first ever)."""
        return self.earlier.compactions + 1

    @property
    def total(self) -> int:
        """Every compaction of the session, kept or counted."""
        return self.earlier.compactions + len(self.compactions)

    @property
    def refused_total(self) -> int:
        return self.refused_earlier + len(self.refused)

    @property
    def points(self) -> tuple[TimelinePoint, ...]:
        """The pressure timeline: the steps, each compaction's before and after, and now when it
        is past them. Laid out on each call: a snapshot is taken at every change, its
        timeline only drawn when a page or a download asks."""
        points = [TimelinePoint(seq, time, tokens, "step") for seq, time, tokens in self.steps]
        for number, compaction in enumerate(self.compactions, start=self.first):
            if compaction.before is not None:
                points.append(
                    TimelinePoint(
                        compaction.seq, compaction.time, compaction.before, "before", number
                    )
                )
            if compaction.after is not None and compaction.end_seq is not None:
                points.append(
                    TimelinePoint(
                        compaction.end_seq, compaction.end_time, compaction.after, "after", number
                    )
                )
        points.sort(key=lambda p: (p.seq, p.role != "before"))
        now = self.now
        if now is not None and (not points or now[0] > points[-1].seq):
            points.append(TimelinePoint(*now, "now"))
        return tuple(points)

    @property
    def summaries(self) -> int:
        kept = sum(1 for f in self.compactions if f.kind != "prune" and f.status == "done")
        return self.earlier.summaries + kept

    @property
    def failed(self) -> int:
        return self.earlier.failed + sum(1 for f in self.compactions if f.status == "failed")

    @property
    def prune_passes(self) -> int:
        return self.earlier.prune_passes + sum(1 for f in self.compactions if f.kind == "prune")

    @property
    def prunes(self) -> int:
        """``compaction/prune`` events: the tool results pruned, over every pass."""
        return self.earlier.prunes + sum(f.prunes for f in self.compactions if f.kind == "prune")

    @property
    def dropped(self) -> int:
        return self.earlier.dropped + sum(f.dropped or 0 for f in self.compactions)

    def tally(self) -> CompactionTally:
        """Every compaction, kept or counted, added up."""
        tally = self.earlier
        for compaction in self.compactions:
            tally = tally.add(compaction)
        return tally


_TOKENS = attrgetter("tokens")
R = TypeVar("R", Compaction, CompactionCost)
_FIELDS = {cls: (cls.__slots__, attrgetter(*cls.__slots__)) for cls in (Compaction, CompactionCost)}


def _evolve(record: R, **changes: Any) -> R:
    """``dataclasses.replace`` for the ledger's frozen records, at a third of its cost: a
    prune pass changes its compaction at every prune and every replacing result."""
    cls = type(record)
    names, values = _FIELDS[cls]
    new = object.__new__(cls)
    for name, value in zip(names, values(record), strict=True):
        object.__setattr__(new, name, value)
    for name, value in changes.items():
        if name not in names:
            raise TypeError(f"{cls.__name__} has no field {name}")
        object.__setattr__(new, name, value)
    return new


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _count(data: ShadowData) -> int:
    return data.shadowed_token_count or 0


def _range(data: ShadowData) -> tuple[int, int] | None:
    found = data.shadowed_range
    start, end = (_int(found.start), _int(found.end)) if found is not None else (None, None)
    return (start, end) if start is not None and end is not None else None


def refused_as_too_large(data: SurfaceData | None) -> bool:
    """An ``assistant/attempt`` whose stream ends with a context-window failure."""
    if data is None:
        return False
    for record in reversed(stream_chunks(data)):
        chunk = record.chunk
        if chunk is not None and chunk.type == "finish":
            reason = chunk.reason
            failure = reason.get("failure") if isinstance(reason, dict) else None
            return isinstance(failure, dict) and failure.get("code") == CONTEXT_WINDOW_EXCEEDED
    return False


def overflow_pending(cls: type, data: Any, pending: bool) -> bool:
    """Whether a compaction that starts after this event is an overflow recovery: a
    request of the step was refused as too large (:func:`refused_as_too_large`) and no
    answer, new step or turn came since. ``pending``: what it was before the event (the
    ``compaction/start`` that takes it is the caller's)."""
    if cls in USAGE_EVENTS:
        return False if cls is AssistantMessage else pending or refused_as_too_large(data)
    return False if cls in _OVERFLOW_FORGOTTEN else pending


@dataclass(slots=True)
class LedgerCollector:
    """Fold-side state of the ledger; see the module docstring for what it keeps."""

    compactions: list[Compaction] = field(default_factory=list)
    open_compaction: int | None = None
    """Index of the compaction waiting for its ``compaction/end``."""
    pass_open: bool = False
    """The last compaction is a prune pass that may still grow."""
    armed: str | None = None
    """``summary`` or ``prune`` when the last event priced a replace to come."""
    overflow: bool = False
    """A request was refused as too large and no step has started since."""
    commands: dict[str, tuple[int, int | None, str, str]] = field(default_factory=dict)
    """``command/run`` waiting for its ``command/done``: id → (seq, time, name, args)."""
    command_compactions: dict[str, int] = field(default_factory=dict)
    refused: list[CompactCommand] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    earlier: CompactionTally = field(default_factory=CompactionTally)
    refused_earlier: int = 0
    stride: int = 1
    seen: int = 0
    last_time: int | None = None
    checkpoint_seq: int | None = None
    """The seq of the last compaction's checkpoint (what follows it is sent anew)."""
    crediting: int | None = None
    """Index of the last compaction that ended well: the requests after it did not resend what
    it freed (until the next one ends well)."""
    not_resent: dict[Slot, int] = field(default_factory=dict)
    """Those requests by slot (kept here, written into the compaction as it is let go)."""
    resent_tokens: dict[Slot, int] = field(default_factory=dict)
    unsent_tokens: dict[Slot, int] = field(default_factory=dict)
    """Every compaction's so far (:class:`~dshweb.core.fold.cost.CompactionSpend`)."""

    def count(self, event: AnyEvent) -> None:
        """:meth:`observe` of an event that is no compaction, request, command or surface
        change, and leaves the overflow as it was (a tool call, a plugin's own event)."""
        time = event.time
        if time is not None:
            self.last_time = time
        self.armed = None
        if type(event) in _PASS_ENDS:
            self.pass_open = False

    def observe(self, event: AnyEvent, meter: SessionMeter, retain: int | None = None) -> None:
        """Look at ``event`` after ``meter`` has folded it (``retain``: the ``retainTokens``
        of the session's engine now, for what an automatic compaction was to shadow)."""
        cls = type(event)
        seq = event.seq
        if seq is None:
            seq = meter.last_seq
        time = event.time
        if time is not None:
            self.last_time = time
        armed, self.armed = self.armed, None
        replacing = cls in _SURFACE and isinstance(event.surface_op, Replace)  # type: ignore[union-attr]
        if self.pass_open and (cls in _PASS_ENDS or (cls in _SURFACE and not replacing)):
            self.pass_open = False
        data: Any = getattr(event, "data", None)
        self.overflow = overflow_pending(cls, data, self.overflow)
        if cls in USAGE_EVENTS:
            tokens = meter.projected_tokens
            if tokens is not None and seq == meter.sampled_seq:
                self._step_point(seq, time, tokens)
            self._request(meter)
        elif cls is CompactionStart:
            self._start(data or CompactionData(), seq, time, meter, retain)
        elif cls is CompactionSummary:
            self._summary(data or ShadowData(), time)
        elif cls is CompactionEnd:
            self._end(data or CompactionData(), seq, time, meter)
        elif cls is CompactionPrune:
            self._prune(data or ShadowData(), seq, time, meter)
        elif cls is CommandRun:
            self._command_run(data or CommandData(), seq, time)
        elif cls is CommandDone:
            self._command_done(data or CommandData(), seq)
        elif replacing and armed is not None:
            self._checkpoint(armed, seq, time, meter)

    # -- events --------------------------------------------------------------------------

    def _request(self, meter: SessionMeter) -> None:
        """A request after a compaction: the first sends the changed prefix again, each does
        not resend what the compaction freed (a sample replacing its step's last is not
        counted again)."""
        sample, index = meter.sample, self.crediting
        if sample is None or sample.replaced is not None or index is None:
            return
        slot, compaction = sample.slot, self.compactions[index]
        if compaction.cost.rewrite is None:
            self.compactions[index] = _evolve(
                compaction, cost=_evolve(compaction.cost, rewrite=slot)
            )
            self.resent_tokens[slot] = self.resent_tokens.get(slot, 0) + compaction.cost.rewritten
        self.not_resent[slot] = self.not_resent.get(slot, 0) + 1
        freed = max(0, compaction.saved or 0)
        self.unsent_tokens[slot] = self.unsent_tokens.get(slot, 0) + freed

    def _credit(self, index: int, meter: SessionMeter, checkpoint_seq: int | None) -> int | None:
        """Compaction ``index`` ended well: the requests from now on are its; ``checkpoint_seq``
        the node that replaced what it shadowed (what follows it is sent anew). Returns
        its ``cost.rewritten`` when that grew (the caller writes it into the compaction,
        with whatever else it changes there)."""
        if index != self.crediting:
            self._settle()
            self.crediting = index
        if checkpoint_seq is None:
            return None
        try:
            at = meter.node_seqs.index(checkpoint_seq)
        except ValueError:
            return None
        rewritten = sum(map(_TOKENS, meter.nodes[at:]))
        return rewritten if rewritten > self.compactions[index].cost.rewritten else None

    def _settle(self) -> None:
        """Write the requests counted so far into the compaction they belong to."""
        index = self.crediting
        if index is not None:
            self.compactions[index] = self._credited(self.compactions[index])
        self.crediting, self.not_resent = None, {}

    def _credited(self, compaction: Compaction) -> Compaction:
        if not self.not_resent:
            return compaction
        return _evolve(
            compaction, cost=_evolve(compaction.cost, not_resent=tuple(self.not_resent.items()))
        )

    def _step_point(self, seq: int, time: int | None, tokens: int) -> None:
        if self.seen % self.stride == 0:
            self.steps.append((seq, time, tokens))
        self.seen += 1
        if len(self.steps) > MAX_STEP_POINTS:
            # Kept points are the multiples of the stride in order: keep every other one.
            del self.steps[1::2]
            self.stride *= 2

    def _start(
        self,
        data: CompactionData,
        seq: int,
        time: int | None,
        meter: SessionMeter,
        retain: int | None,
    ) -> None:
        turn = _int(data.turn)
        kind: CompactionKind = (
            "manual" if turn is None else "overflow" if self.overflow else "automatic"
        )
        self.overflow = False
        # A manual Compact and an overflow recovery keep nothing; an automatic one, retain.
        kept = retain if kind == "automatic" else 0
        command_id = _str(data.source_command_id)
        run = self.commands.get(command_id) if command_id is not None else None
        compaction = Compaction(
            kind=kind,
            seq=seq,
            time=time,
            turn=turn,
            compaction_id=_str(data.compaction_id),
            before=meter.projected_tokens,
            command=_typed(run[2], run[3]) if run is not None else None,
            command_seq=run[0] if run is not None else None,
            previewed=None if kept is None else previewed(meter, kept),
        )
        self.compactions.append(compaction)
        self.open_compaction = len(self.compactions) - 1
        if command_id is not None:
            self.command_compactions[command_id] = self.open_compaction
        self._keep_newest()

    def _keep_newest(self) -> None:
        """Count the oldest compaction instead of keeping it, past :data:`MAX_COMPACTIONS`."""
        if len(self.compactions) <= MAX_COMPACTIONS:
            return
        if self.crediting == 0:
            self._settle()
        self.earlier = self.earlier.add(self.compactions.pop(0))
        if self.open_compaction is not None:
            self.open_compaction = self.open_compaction - 1 if self.open_compaction > 0 else None
        if self.crediting is not None:
            self.crediting -= 1
        self.command_compactions = {c: i - 1 for c, i in self.command_compactions.items() if i > 0}

    def _open(self, data: CompactionData | ShadowData) -> int | None:
        index = self.open_compaction
        if index is None:
            return None
        wanted = _str(data.compaction_id)
        found = self.compactions[index].compaction_id
        return index if wanted is None or found is None or wanted == found else None

    def _summary(self, data: ShadowData, time: int | None) -> None:
        index = self._open(data)
        if index is None:
            return
        provider, model = _str(data.provider), _str(data.model)
        route = summary_route(data)
        compaction = self.compactions[index]
        cost = (
            compaction.cost
            if route is None
            else _evolve(compaction.cost, summary=slot_of(route, time))
        )
        self.compactions[index] = _evolve(
            compaction,
            cost=cost,
            shadowed_tokens=_count(data),
            shadowed_nodes=len(data.shadowed_seqs or ()),
            shadowed_range=_range(data),
            summary_usage=to_usage(data.usage),
            summary_model=f"{provider}/{model}" if provider and model else model,
        )
        self.armed = "summary"

    def _end(self, data: CompactionData, seq: int, time: int | None, meter: SessionMeter) -> None:
        index = self._open(data)
        if index is None:
            return
        error = data.error
        self.compactions[index] = _evolve(
            self.compactions[index],
            end_seq=seq,
            end_time=time,
            after=meter.projected_tokens,
            error=None if error in (None, "") else str(error),
        )
        self.open_compaction = None
        if self.compactions[index].status == "done":
            rewritten = self._credit(index, meter, self.checkpoint_seq)
            if rewritten is not None:
                compaction = self.compactions[index]
                self.compactions[index] = _evolve(
                    compaction, cost=_evolve(compaction.cost, rewritten=rewritten)
                )

    def _prune(self, data: ShadowData, seq: int, time: int | None, meter: SessionMeter) -> None:
        if not self.pass_open:  # a new pass, made with its first prune counted
            self.compactions.append(
                Compaction(
                    kind="prune",
                    seq=seq,
                    time=time,
                    shadowed_tokens=_count(data),
                    shadowed_nodes=len(data.shadowed_seqs or ()),
                    checkpoint_tokens=0,
                    before=meter.projected_tokens,
                    prunes=1,
                )
            )
            self.pass_open = True
            self._keep_newest()
        else:
            last = self.compactions[-1]
            self.compactions[-1] = _evolve(
                last,
                shadowed_tokens=(last.shadowed_tokens or 0) + _count(data),
                shadowed_nodes=last.shadowed_nodes + len(data.shadowed_seqs or ()),
                prunes=last.prunes + 1,
            )
        self.armed = "prune"

    def _checkpoint(self, armed: str, seq: int, time: int | None, meter: SessionMeter) -> None:
        price = meter.last_price  # the replacing node, as the meter priced it
        if armed == "summary":
            index = self.open_compaction
            if index is not None:
                self.compactions[index] = _evolve(self.compactions[index], checkpoint_tokens=price)
                self.checkpoint_seq = seq
        elif self.pass_open:
            index = len(self.compactions) - 1
            rewritten = self._credit(index, meter, seq)
            last = self.compactions[index]
            self.compactions[index] = _evolve(
                last,
                checkpoint_tokens=(last.checkpoint_tokens or 0) + price,
                end_seq=seq,
                end_time=time,
                after=meter.projected_tokens,
                cost=last.cost if rewritten is None else _evolve(last.cost, rewritten=rewritten),
            )

    def _command_run(self, data: CommandData, seq: int, time: int | None) -> None:
        command_id = _str(data.command_id)
        if command_id is not None:
            name, args = _str(data.name) or "", _str(data.args) or ""
            self.commands[command_id] = (seq, time, name, args)
            if len(self.commands) > MAX_PENDING_COMMANDS:
                del self.commands[next(iter(self.commands))]

    def _command_done(self, data: CommandData, seq: int) -> None:
        command_id = _str(data.command_id)
        if command_id is None:
            return
        run = self.commands.pop(command_id, None)
        index = self.command_compactions.pop(command_id, None)
        kind, text = _str(data.kind) or "", _str(data.text)
        if index is not None:
            self.compactions[index] = _evolve(
                self.compactions[index], command_kind=kind, command_text=text
            )
        elif run is not None and run[2] == "compact":
            self.refused.append(
                CompactCommand(run[0], run[1], _typed(run[2], run[3]), kind, text, seq)
            )
            if len(self.refused) > MAX_REFUSED:
                del self.refused[0]
                self.refused_earlier += 1

    # -- result --------------------------------------------------------------------------

    def result(self, meter: SessionMeter, *, threshold: int | None = None) -> Ledger:
        """The ledger as of the last event folded; ``threshold`` is drawn on the timeline."""
        tokens = meter.projected_tokens
        compactions = tuple(self.compactions)
        if self.crediting is not None and self.not_resent:
            index = self.crediting
            compactions = (
                *compactions[:index],
                self._credited(compactions[index]),
                *compactions[index + 1 :],
            )
        return Ledger(
            compactions=compactions,
            refused=tuple(self.refused),
            steps=tuple(self.steps),
            now=(meter.last_seq, self.last_time, tokens) if tokens is not None else None,
            threshold=threshold,
            earlier=self.earlier,
            refused_earlier=self.refused_earlier,
            spend=CompactionSpend(
                tuple(self.resent_tokens.items()), tuple(self.unsent_tokens.items())
            ),
        )


def _typed(name: str, args: str) -> str:
    return f"/{name} {args}".rstrip()
