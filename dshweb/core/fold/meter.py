"""The host's three projections, folded event by event (DSH_FACTS §4 and §6).

:class:`SessionMeter` is the whole fold state of one session: node prices and a few
counters, never event bodies, so appending events costs time proportional to the new
events only and folding a log in any number of pieces gives the same state.
``host_state()`` returns the state in the exact shape of the host's projection cache;
the ``*_view`` methods return the fields the host's views publish.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dshweb.core.fold.billing import Slot, slot_of
from dshweb.core.fold.pricing import (
    Shape,
    message_price,
    priced_message,
    read_header,
)
from dshweb.core.log.decode import raw_list
from dshweb.core.log.wire import (
    SURFACE,
    AnyEvent,
    AssistantAttempt,
    AssistantMessage,
    CompactionPrune,
    CompactionSummary,
    Message,
    Replace,
    RequestContext,
    RequestHeader,
    RetryStarted,
    StreamRecord,
    SurfaceData,
    SurfaceEvent,
    SystemMessage,
    ToolResult,
)
from dshweb.core.log.wire import Usage as WireUsage
from dshweb.core.said import say

_SURFACE = frozenset(SURFACE)
USAGE_EVENTS = frozenset({AssistantMessage, AssistantAttempt})
"""The events that can carry a usage sample (DSH_FACTS §6: ``usage(e)``); the meter, the
pace and the ledger all key on this one set."""


@dataclass(frozen=True, slots=True)
class SurfaceNode:
    """One message the model sees: where it came from, what it costs, how it starts."""

    seq: int
    kind: str
    tokens: int
    preview: str
    calls: int = 0
    """How it moves the count of tool calls awaiting their result (the engine's cut
    balance): an assistant message's tool calls, −1 for a tool result."""
    shape: Shape | None = None
    """A tool result long enough for some pruner to cut: its text as the pruner measures
    it (:func:`~dshweb.core.fold.pricing.pruned_price` prices the cut)."""


@dataclass(frozen=True, slots=True)
class Usage:
    input: int
    output: int
    cache_read: int
    cache_write: int

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write

    @property
    def counts(self) -> tuple[int, int, int, int]:
        """The four buckets, in :data:`BUCKET_NAMES`' order."""
        return (self.input, self.output, self.cache_read, self.cache_write)

    def buckets(self) -> dict[str, int]:
        return dict(zip(BUCKET_NAMES, self.counts, strict=True))


@dataclass(frozen=True, slots=True)
class Sample:
    """The usage sample the event just folded counted into ``tokenUsage``: its billing
    slot (who answered, when), and which earlier sample it replaced (DSH_FACTS §6: a sample
    of the same turn and step replaces the last one in the totals)."""

    slot: Slot
    usage: Usage
    replaced: Usage | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """A shadow price armed by ``compaction/summary`` or ``compaction/prune``."""

    start: Any
    end: Any
    tokens: int
    shadowed: frozenset[int]


@dataclass(frozen=True, slots=True)
class Anchor:
    """The last assistant message with usage: what ``measure()`` re-bases on."""

    header: bytes
    surface_before: int
    price: int
    provider_total: int


def to_usage(raw: WireUsage | None) -> Usage | None:
    """A usage record as :class:`Usage`; ``None`` if it is not one."""
    if raw is None or raw.input_tokens is None:
        return None
    return Usage(
        raw.input_tokens,
        raw.output_tokens or 0,
        raw.cache_read_tokens or 0,
        raw.cache_write_tokens or 0,
    )


def stream_chunks(data: SurfaceData) -> list[StreamRecord]:
    return raw_list(data.stream, StreamRecord)


def event_usage(data: SurfaceData | None) -> Usage | None:
    """``data.usage`` of an assistant message, else the last usage chunk in its stream."""
    if data is None:
        return None
    found = to_usage(data.usage)
    if found is not None:
        return found
    for record in reversed(stream_chunks(data)):
        chunk = record.chunk
        if chunk is not None and chunk.type == "usage":
            return to_usage(chunk.usage)
    return None


def surface_message(event: SurfaceEvent) -> Message | None:
    data = event.data
    if isinstance(data, Message):
        return data
    return data.message if data is not None else None


Priced = tuple[int, str, Shape | None, int]
"""A surface message's price, preview, (a tool result's) shape and tool calls."""


def _node(event: SurfaceEvent, seq: int, priced: Priced) -> SurfaceNode:
    """``event`` as a surface node (a tool result with its shape, for the pruner)."""
    kind = type(event)
    price, preview, shape, calls = priced
    if kind is AssistantMessage:
        return SurfaceNode(seq, event.kind, price, preview, calls=calls)
    if kind is ToolResult:
        return SurfaceNode(seq, event.kind, price, preview, calls=-1, shape=shape)
    return SurfaceNode(seq, event.kind, price, preview)


MAX_ADDED = 256
"""The most shapes :attr:`SessionMeter.results_added` holds for a reader that is late."""

MAX_PROBLEMS = 20
"""Problems of a log kept word for word; the rest are counted (a hostile log can have
millions)."""


@dataclass(slots=True)
class SessionMeter:
    """Fold state of the three projections plus the surface and the measure anchor."""

    last_seq: int = -1
    events: int = 0
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    last_sample: tuple[int, int, Usage] | None = None
    surface_tokens: int = 0
    context_window: int | None = None
    pressure_tokens: int | None = None
    sampled_surface_tokens: int | None = None
    sampled_seq: int | None = None
    """The seq of the last event that carried usage (collectors read it, not re-parse)."""
    systems: list[tuple[int, int]] = field(default_factory=list)
    breakdown_surface_tokens: int = 0
    """contextBreakdown's own surface sum: it also prices an unpriced system replace."""
    tools_tokens: int = 0
    header: bytes | None = None
    """The canonical request header (:func:`~dshweb.core.fold.pricing.header_key`)."""
    reserved_tokens: int = 0
    """``maxTokens`` of the request header's config: the completion DSH reserves."""
    model: str | None = None
    provider: str | None = None
    """``provider`` of the request header's config (the route's provider)."""
    sample: Sample | None = None
    """The usage sample of the event folded last (``None`` if it carried none)."""
    last_price: int = 0
    """Price of the last surface node folded (the ledger's checkpoint price)."""
    claim: Claim | None = None
    nodes: list[SurfaceNode] = field(default_factory=list)
    node_seqs: list[int] = field(default_factory=list)
    """The seqs of ``nodes``, in order (a replace finds its range here)."""
    nodes_tokens: int = 0
    open_calls: int = 0
    """Tool calls on the surface awaiting their result (the sum of the nodes' ``calls``)."""
    results: int = 0
    """Tool results on the surface."""
    prunable: dict[int, SurfaceNode] = field(default_factory=dict)
    """The tool results on the surface long enough for some pruner to cut, by seq."""
    results_added: list[Shape] = field(default_factory=list, compare=False)
    """The shapes of the tool results appended since a reader last cleared it (the
    forecast's samples: what each step added that a prune would cut). A hand-off
    buffer, not a projection: two meters of the same log are equal whoever read it."""
    anchor: Anchor | None = None
    problems: list[str] = field(default_factory=list)
    """The first :data:`MAX_PROBLEMS` things in the log the meter could not fold."""
    more_problems: int = 0
    """Problems past those."""

    # -- folding -------------------------------------------------------------------------

    def _problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)
        else:
            self.more_problems += 1

    def count(self, event: AnyEvent) -> None:
        """Fold an event of a type no projection reads: :meth:`fold` of it, faster."""
        seq = event.seq
        if seq is not None:
            self.last_seq = seq
        self.events += 1
        self.sample = None
        self.claim = None

    def fold(self, event: AnyEvent) -> None:
        """Fold one event."""
        claim = self.claim
        self.count(event)
        cls = type(event)
        priced = None
        if cls in _SURFACE and event.surface_op is not None:  # type: ignore[union-attr]
            message = surface_message(event)  # type: ignore[arg-type]
            priced = priced_message(message, shape=cls is ToolResult)
        if cls in USAGE_EVENTS:
            self._sample(event, priced)  # type: ignore[arg-type]
        if cls in _SURFACE:
            if priced is not None:
                self._surface(event, claim, priced)  # type: ignore[arg-type]
        elif cls is CompactionSummary or cls is CompactionPrune:
            self._arm(event)  # type: ignore[arg-type]
        elif cls is RequestHeader:
            data = event.data  # type: ignore[union-attr]
            reading = read_header(data.header if data is not None else None)
            self.header = reading.key
            self.tools_tokens = reading.tools_tokens
            config = reading.config
            self.reserved_tokens = config.max_tokens or 0
            self.model = config.model if config.model is not None else self.model
            self.provider = config.provider if config.provider is not None else self.provider
        elif cls is RequestContext:
            data = event.data  # type: ignore[union-attr]
            window = data.context_window if data is not None else None
            if window is not None:
                self.context_window = window
        elif cls is RetryStarted:
            data = event.data  # type: ignore[union-attr]
            last = self.last_sample
            if (
                data is not None
                and last is not None
                and (last[0], last[1]) == (data.turn, data.step)
            ):
                self.last_sample = None

    def _sample(self, event: AssistantMessage | AssistantAttempt, priced: Priced | None) -> None:
        data = event.data
        usage = event_usage(data)
        if usage is None or data is None:
            return
        turn, step = data.turn, data.step
        last = self.last_sample
        replaced = last[2] if last is not None and (last[0], last[1]) == (turn, step) else None
        totals = self.totals
        if replaced is None:
            self.totals = [
                totals[0] + usage.input,
                totals[1] + usage.output,
                totals[2] + usage.cache_read,
                totals[3] + usage.cache_write,
            ]
        else:
            self.totals = [
                totals[0] + usage.input - replaced.input,
                totals[1] + usage.output - replaced.output,
                totals[2] + usage.cache_read - replaced.cache_read,
                totals[3] + usage.cache_write - replaced.cache_write,
            ]
        self.last_sample = (turn, step, usage)
        source = data.message.source if data.message is not None else None
        model = _source_str(source, "model") or self.model or ""
        provider = _source_str(source, "provider") or self.provider or ""
        self.sample = Sample(slot_of((model, provider), event.time), usage, replaced)
        self.pressure_tokens = usage.prompt
        self.sampled_surface_tokens = self.surface_tokens
        self.sampled_seq = event.seq
        if type(event) is AssistantMessage and self.header is not None:
            self.anchor = Anchor(
                header=self.header,
                surface_before=self.nodes_tokens,
                price=priced[0] if priced is not None else message_price(data.message)[0],
                provider_total=usage.prompt + usage.output,
            )

    def _arm(self, event: CompactionSummary | CompactionPrune) -> None:
        data = event.data
        shadowed_range = data.shadowed_range if data is not None else None
        shadowed = (data.shadowed_seqs if data is not None else None) or ()
        count = data.shadowed_token_count if data is not None else None
        system_seqs = {s for s, _ in self.systems}
        self.claim = Claim(
            start=shadowed_range.start if shadowed_range is not None else -1,
            end=shadowed_range.end if shadowed_range is not None else -1,
            tokens=count or 0,
            shadowed=frozenset(s for s in shadowed if s in system_seqs),
        )

    def _surface(self, event: SurfaceEvent, claim: Claim | None, priced: Priced) -> None:
        price = priced[0]
        seq = event.seq if event.seq is not None else -1
        self.last_price = price
        node = _node(event, seq, priced)
        op = event.surface_op
        if op == "append":
            self.surface_tokens += price
            self.breakdown_surface_tokens += price
            self.nodes.append(node)
            self.node_seqs.append(seq)
            self.nodes_tokens += price
            self._count(node, 1)
            if node.shape is not None:
                self.results_added.append(node.shape)
                del self.results_added[:-MAX_ADDED]
            if type(event) is SystemMessage:
                self.systems.append((seq, price))
            return
        if not isinstance(op, Replace) or op.op != "replace":
            self._problem(say("op-unknown", seq=seq, op=_op_text(op)))
            return
        start, end = op.start_seq, op.end_seq
        self._replace_nodes(node, start, end)
        if claim is not None and (claim.start, claim.end) != (start, end):
            self._problem(
                say(
                    "replace-unpriced",
                    seq=seq,
                    start=start,
                    end=end,
                    low=claim.start,
                    high=claim.end,
                )
            )
            claim = None
        if claim is not None:
            self.surface_tokens += price - claim.tokens
            self.breakdown_surface_tokens += price - claim.tokens
            if claim.shadowed:
                self.systems = [s for s in self.systems if s[0] not in claim.shadowed]
        elif start == end and any(s == start for s, _ in self.systems):
            # An unpriced in-place system update (dsh rewriting its prompt, DSH_FACTS §6):
            # contextPressure's surface is unchanged, contextBreakdown's moves by the
            # difference, so from here on the two sums differ. The node is now known by
            # the replacing event's seq; a replacement that is not a system message
            # takes it off the system list.
            old = next(t for s, t in self.systems if s == start)
            self.breakdown_surface_tokens += price - old
            if type(event) is SystemMessage:
                self.systems = [(seq, price) if s == start else (s, t) for s, t in self.systems]
            else:
                self.systems = [(s, t) for s, t in self.systems if s != start]

    def _replace_nodes(self, node: SurfaceNode, start: Any, end: Any) -> None:
        seqs = self.node_seqs
        try:  # a prune replaces one node: one search
            first = seqs.index(start)
            last = first if end == start else seqs.index(end)
        except ValueError:
            self._problem(say("replace-missing", seq=node.seq, start=start, end=end))
            return
        if last < first:
            first, last = last, first
        gone = self.nodes[first : last + 1]
        for old in gone:
            self._count(old, -1)
        self._count(node, 1)
        self.nodes[first : last + 1] = [node]
        seqs[first : last + 1] = [node.seq]
        self.nodes_tokens += node.tokens - sum(n.tokens for n in gone)

    def _count(self, node: SurfaceNode, sign: int) -> None:
        """Count ``node`` onto the surface (``sign`` 1) or off it (−1)."""
        self.open_calls += sign * node.calls
        if node.calls < 0:
            self.results += sign
        if node.shape is not None:
            if sign > 0:
                self.prunable[node.seq] = node
            else:
                self.prunable.pop(node.seq, None)

    # -- views ---------------------------------------------------------------------------

    @property
    def system_tokens(self) -> int:
        for _, tokens in reversed(self.systems):
            if tokens > 0:
                return tokens
        return 0

    @property
    def projected_tokens(self) -> int | None:
        if self.pressure_tokens is None or self.sampled_surface_tokens is None:
            return None
        return max(0, self.pressure_tokens + self.surface_tokens - self.sampled_surface_tokens)

    def token_usage_view(self) -> dict[str, int]:
        return dict(zip(BUCKET_NAMES, self.totals, strict=True))

    def context_pressure_view(self) -> dict[str, int]:
        view: dict[str, int] = {}
        if self.context_window is not None:
            view["contextWindow"] = self.context_window
        if self.pressure_tokens is not None:
            view["pressureTokens"] = self.pressure_tokens
        projected = self.projected_tokens
        if projected is not None:
            view["projectedTokens"] = projected
        return view

    def context_breakdown_view(self) -> dict[str, int]:
        system = self.system_tokens
        return {
            "systemTokens": system,
            "toolsTokens": self.tools_tokens,
            "messageTokens": max(0, self.breakdown_surface_tokens - system),
        }

    def host_state(self) -> dict[str, Any]:
        """The three projections' states, shaped like the host's projection cache rows."""
        pressure: dict[str, Any] = {"surfaceTokens": self.surface_tokens}
        if self.context_window is not None:
            pressure["contextWindow"] = self.context_window
        if self.pressure_tokens is not None:
            pressure["pressureTokens"] = self.pressure_tokens
            pressure["sampledSurfaceTokens"] = self.sampled_surface_tokens
        last = self.last_sample
        return {
            "tokenUsage": {
                "totals": self.token_usage_view(),
                "last": None
                if last is None
                else {"turn": last[0], "step": last[1], "buckets": last[2].buckets()},
            },
            "contextPressure": pressure,
            "contextBreakdown": {
                "systems": [{"seq": s, "tokens": t} for s, t in self.systems],
                "surfaceTokens": self.breakdown_surface_tokens,
                "breakdown": self.context_breakdown_view(),
            },
        }


def _source_str(source: Any, key: str) -> str | None:
    """``source[key]`` of an assistant message when it is a string (who answered)."""
    value = source.get(key) if isinstance(source, dict) else None
    return value if isinstance(value, str) and value else None


def _op_text(op: object) -> str:
    if isinstance(op, Replace):
        return f"{{op: {op.op!r}}}"
    return repr(op)


BUCKET_NAMES = ("uncachedInputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
"""``tokenUsage``'s buckets, in the order :class:`Usage` and the cost's tallies keep them."""
BUCKET_KEYS = ("uncached_input", "output", "cache_read", "cache_write")
"""The same buckets as the step export's columns and the metrics' ``kind`` label name them."""


def cache_and_prompt(token_usage: Mapping[str, int]) -> tuple[int, int]:
    """Of ``tokenUsage``'s sums: the cache-read tokens, and every prompt token (uncached,
    cache-read and cache-write): a cache-hit ratio is the first over the second."""
    read = token_usage.get("cacheReadTokens", 0)
    uncached = token_usage.get("uncachedInputTokens", 0)
    return read, uncached + read + token_usage.get("cacheWriteTokens", 0)
