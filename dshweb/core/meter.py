"""The host's three projections, folded event by event (DSH_FACTS §4 and §6).

:class:`SessionMeter` is the whole fold state of one session: node prices and a few
counters, never event bodies, so appending events costs time proportional to the new
events only and folding a log in any number of pieces gives the same state.
``host_state()`` returns the state in the exact shape of the host's projection cache;
the ``*_view`` methods return the fields the host's views publish.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dshweb.core.pricing import canonical_header, message_tokens, tools_tokens

SURFACE_TYPES = frozenset(
    {"system/message", "developer/message", "user/message", "assistant/message", "tool/result"}
)
_USAGE_TYPES = frozenset({"assistant/message", "assistant/attempt"})
_PREVIEW_CHARS = 80


@dataclass(frozen=True, slots=True)
class SurfaceNode:
    """One message the model sees: where it came from, what it costs, how it starts."""

    seq: int
    kind: str
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class Usage:
    input: int
    output: int
    cache_read: int
    cache_write: int

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write

    def buckets(self) -> dict[str, int]:
        return {
            "uncachedInputTokens": self.input,
            "outputTokens": self.output,
            "cacheReadTokens": self.cache_read,
            "cacheWriteTokens": self.cache_write,
        }


@dataclass(frozen=True, slots=True)
class Claim:
    """A shadow price armed by ``compaction/summary`` or ``compaction/prune``."""

    start: int
    end: int
    tokens: int
    shadowed: frozenset[int]


@dataclass(frozen=True, slots=True)
class Anchor:
    """The last assistant message with usage: what ``measure()`` re-bases on."""

    header: dict[str, Any]
    surface_before: int
    price: int
    provider_total: int


def parse_usage(raw: Any) -> Usage | None:
    """A usage record (``inputTokens``, …) as :class:`Usage`; ``None`` if it is not one."""
    if not isinstance(raw, dict) or "inputTokens" not in raw:
        return None
    return Usage(
        int(raw.get("inputTokens") or 0),
        int(raw.get("outputTokens") or 0),
        int(raw.get("cacheReadTokens") or 0),
        int(raw.get("cacheWriteTokens") or 0),
    )


def event_usage(event: dict[str, Any]) -> Usage | None:
    """``data.usage`` of an assistant message, else the last usage chunk in its stream."""
    data = event.get("data")
    if not isinstance(data, dict):
        return None
    found = parse_usage(data.get("usage"))
    if found is not None:
        return found
    stream = data.get("stream")
    if isinstance(stream, list):
        for record in reversed(stream):
            chunk = record.get("chunk") if isinstance(record, dict) else None
            if isinstance(chunk, dict) and chunk.get("type") == "usage":
                return parse_usage(chunk.get("usage"))
    return None


def surface_message(event: dict[str, Any]) -> Any:
    data = event.get("data")
    if event.get("type") == "user/message":
        return data
    return data.get("message") if isinstance(data, dict) else None


def _preview(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content[:_PREVIEW_CHARS]
    parts: list[str] = []
    size = 0
    for block in content or ():
        if not isinstance(block, dict):
            continue
        text = block.get("text")
        if not isinstance(text, str):
            kind = block.get("type")
            text = f"[{kind} {block.get('name', '')}]".replace(" ]", "]")
        parts.append(text[: _PREVIEW_CHARS - size])
        size += len(parts[-1])
        if size >= _PREVIEW_CHARS:
            break
    return " ".join(" ".join(parts).split())[:_PREVIEW_CHARS]


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
    header: dict[str, Any] | None = None
    claim: Claim | None = None
    nodes: list[SurfaceNode] = field(default_factory=list)
    nodes_tokens: int = 0
    anchor: Anchor | None = None
    problems: list[str] = field(default_factory=list)

    # -- folding -------------------------------------------------------------------------

    def fold(self, event: dict[str, Any]) -> None:
        """Fold one event (the envelope as logged)."""
        kind = event.get("type")
        seq = event.get("seq")
        if isinstance(seq, int):
            self.last_seq = seq
        self.events += 1
        claim, self.claim = self.claim, None
        if kind in _USAGE_TYPES:
            self._sample(event, kind)
        if kind in SURFACE_TYPES and "surfaceOp" in event:
            self._surface(event, kind, claim)
        elif kind == "compaction/summary" or kind == "compaction/prune":
            self._arm(event)
        elif kind == "request/header":
            data = event.get("data") or {}
            self.header = canonical_header(data.get("header"))
            self.tools_tokens = tools_tokens(data.get("header"))
        elif kind == "request/context":
            window = (event.get("data") or {}).get("contextWindow")
            if isinstance(window, int):
                self.context_window = window
        elif kind == "llm/retry-started":
            data = event.get("data") or {}
            last = self.last_sample
            if last is not None and (last[0], last[1]) == (data.get("turn"), data.get("step")):
                self.last_sample = None

    def _sample(self, event: dict[str, Any], kind: str) -> None:
        usage = event_usage(event)
        if usage is None:
            return
        data = event["data"]
        turn, step = data.get("turn"), data.get("step")
        new = (usage.input, usage.output, usage.cache_read, usage.cache_write)
        last = self.last_sample
        if last is not None and (last[0], last[1]) == (turn, step):
            old = last[2]
            new_totals = (
                usage.input - old.input,
                usage.output - old.output,
                usage.cache_read - old.cache_read,
                usage.cache_write - old.cache_write,
            )
            self.totals = [a + b for a, b in zip(self.totals, new_totals, strict=True)]
        else:
            self.totals = [a + b for a, b in zip(self.totals, new, strict=True)]
        self.last_sample = (turn, step, usage)
        self.pressure_tokens = usage.prompt
        self.sampled_surface_tokens = self.surface_tokens
        self.sampled_seq = event.get("seq")
        if kind == "assistant/message" and self.header is not None:
            self.anchor = Anchor(
                header=self.header,
                surface_before=self.nodes_tokens,
                price=message_tokens(surface_message(event)),
                provider_total=usage.prompt + usage.output,
            )

    def _arm(self, event: dict[str, Any]) -> None:
        data = event.get("data") or {}
        shadowed_range = data.get("shadowedRange") or {}
        shadowed = data.get("shadowedSeqs") or ()
        system_seqs = {s for s, _ in self.systems}
        self.claim = Claim(
            start=shadowed_range.get("start", -1),
            end=shadowed_range.get("end", -1),
            tokens=int(data.get("shadowedTokenCount") or 0),
            shadowed=frozenset(s for s in shadowed if s in system_seqs),
        )

    def _surface(self, event: dict[str, Any], kind: str, claim: Claim | None) -> None:
        message = surface_message(event)
        price = message_tokens(message)
        seq = event.get("seq", -1)
        node = SurfaceNode(seq, kind, price, _preview(message))
        op = event["surfaceOp"]
        if op == "append":
            self.surface_tokens += price
            self.breakdown_surface_tokens += price
            self.nodes.append(node)
            self.nodes_tokens += price
            if kind == "system/message":
                self.systems.append((seq, price))
            return
        if not isinstance(op, dict) or op.get("op") != "replace":
            self.problems.append(f"seq {seq}: unknown surfaceOp {op!r} ignored")
            return
        start, end = op.get("startSeq"), op.get("endSeq")
        self._replace_nodes(node, start, end)
        if claim is not None and (claim.start, claim.end) != (start, end):
            self.problems.append(
                f"seq {seq}: replace {start}..{end} does not match the priced range "
                f"{claim.start}..{claim.end}"
            )
            claim = None
        if claim is not None:
            self.surface_tokens += price - claim.tokens
            self.breakdown_surface_tokens += price - claim.tokens
            if claim.shadowed:
                self.systems = [s for s in self.systems if s[0] not in claim.shadowed]
        elif start == end and any(s == start for s, _ in self.systems):
            # An unpriced in-place system update (dsh web re-prompting a session):
            # contextPressure's surface is unchanged, contextBreakdown's moves by the
            # difference (DSH_FACTS §6), so from here on the two sums differ.
            old = next(t for s, t in self.systems if s == start)
            self.breakdown_surface_tokens += price - old
            self.systems = [(s, price if s == start else t) for s, t in self.systems]

    def _replace_nodes(self, node: SurfaceNode, start: Any, end: Any) -> None:
        seqs = [n.seq for n in self.nodes]
        try:
            first, last = seqs.index(start), seqs.index(end)
        except ValueError:
            self.problems.append(
                f"seq {node.seq}: replace {start}..{end} names a node not on the surface"
            )
            return
        if last < first:
            first, last = last, first
        removed = sum(n.tokens for n in self.nodes[first : last + 1])
        self.nodes[first : last + 1] = [node]
        self.nodes_tokens += node.tokens - removed

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
        return dict(zip(_BUCKETS, self.totals, strict=True))

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


_BUCKETS = ("uncachedInputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
