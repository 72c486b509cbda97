"""What the next fold would take away, before it happens: the engine's own rules (DSH_FACTS
§7, read in the runtime's ``compaction-basic`` and ``tool-result-pruner``) applied to the
surface as it stands.

A compaction shadows one range of surface nodes (``selectCompactableRange``): from the
first node that is not the system prompt (a ``system/message`` at node 0 is never in it)
up to a tail it keeps, walked back from the newest node until the tail is priced at
``retainTokens`` or more, then further back until no tool call is cut from its result (the
cut before the tail's first node has every tool call before it answered). Nothing to
shadow, and no compaction, when the tail reaches the first node. The tokens shadowed are
the nodes' own prices (``compaction/summary.shadowedTokenCount``).

- An automatic fold (:func:`automatic_preview`) runs the pruner first: every tool result
  on the surface whose text is over 8,192 code points is cut to its first 4,096 and last
  1,024 (:func:`~dshweb.core.fold.pricing.pruned_price`), each a ``compaction/prune``
  priced at the result's price; then, if the measure is still at or past the point, a
  compaction keeping ``retainTokens``.
- A manual Compact (:func:`manual_preview`) prunes nothing and keeps ``0``: everything but
  the newest node (and what its tool calls need).

The context after the fold is the measure less what the prunes free and the range
shadows, plus a summary of the size the session's own summaries had (their smallest and
largest, an estimate: before the first one, unknown).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dshweb.core.fold.folds import Fold, Previewed
from dshweb.core.fold.meter import SessionMeter, SurfaceNode
from dshweb.core.fold.pricing import pruned_price

SYSTEM = "system/message"
COMPACTIONS = frozenset({"automatic", "manual", "overflow"})
"""The fold kinds that write a summary."""
SUMMARIES = 8
"""The session's last summaries whose sizes say what the next one will be."""


@dataclass(frozen=True, slots=True)
class Cut:
    """A tool result the pruner would cut."""

    seq: int
    tokens: int
    """Its price now: the ``compaction/prune``'s ``shadowedTokenCount``."""
    after: int
    """Its price once cut."""

    @property
    def freed(self) -> int:
        return self.tokens - self.after

    def as_json(self) -> dict[str, int]:
        return {"seq": self.seq, "tokens": self.tokens, "freedTokens": self.freed}


@dataclass(frozen=True, slots=True)
class FoldPreview:
    """What one fold would do to the surface now."""

    kind: str
    """``automatic`` or ``manual``."""
    cuts: tuple[Cut, ...] = ()
    """The pruner's cuts, oldest first (an automatic fold's first move)."""
    compacts: bool = True
    """Whether a compaction follows (an automatic fold's prunes may bring the measure under
    the point by themselves)."""
    first: SurfaceNode | None = None
    """The range's first node (``None``: nothing the engine could shadow)."""
    last: SurfaceNode | None = None
    messages: int = 0
    tool_pairs: int = 0
    """Tool results in the range (each with its call)."""
    shadowed_tokens: int = 0
    retained_tokens: int = 0
    """The tail kept as it is (after the cuts)."""
    after: tuple[int, int] | None = None
    """The measure after the fold, with the smallest and the largest of the session's
    recent summaries in the range's place; ``None`` before the session's first summary."""

    @property
    def pruned_tokens(self) -> int:
        """What the cuts free."""
        return sum(cut.freed for cut in self.cuts)

    def as_json(self) -> dict[str, Any]:
        """The preview in ``dsh_snapshot``'s ``compaction.preview``."""
        first, last = self.first, self.last
        return {
            "fromSeq": first.seq if first is not None else None,
            "toSeq": last.seq if last is not None else None,
            "messages": self.messages,
            "toolPairs": self.tool_pairs,
            "shadowedTokens": self.shadowed_tokens,
            "retainedTokens": self.retained_tokens,
            "prunedResults": [cut.as_json() for cut in self.cuts],
            "prunedTokens": self.pruned_tokens,
            "compacts": self.compacts,
            "first": _node_json(first),
            "last": _node_json(last),
            "afterLow": self.after[0] if self.after is not None else None,
            "afterHigh": self.after[1] if self.after is not None else None,
        }


def _node_json(node: SurfaceNode | None) -> dict[str, Any] | None:
    if node is None:
        return None
    return {"seq": node.seq, "kind": node.kind, "tokens": node.tokens, "preview": node.preview}


@dataclass(frozen=True, slots=True)
class Range:
    """The nodes ``first`` up to (not including) ``keep`` a compaction would shadow."""

    first: int
    keep: int
    retained: int
    """The tail's price."""
    tail_results: int
    """Tool results in the tail."""

    def shadowed(self, nodes: Sequence[SurfaceNode], total: int) -> int:
        """What the range costs, of ``nodes`` priced ``total`` in all: all but the system
        prompt (when it heads them) and the tail."""
        return total - (nodes[0].tokens if self.first else 0) - self.retained


def select_range(
    nodes: Sequence[SurfaceNode],
    open_calls: int,
    retain: int,
    price: Callable[[SurfaceNode], int] = lambda node: node.tokens,
) -> Range | None:
    """``selectCompactableRange``: the range a compaction keeping ``retain`` tokens would
    shadow, with ``open_calls`` tool calls on the surface awaiting their result and each
    node priced by ``price``; ``None`` when there is none. Walks only the tail."""
    count = len(nodes)
    if count == 0:
        return None
    first = 1 if nodes[0].kind == SYSTEM else 0
    kept, keep, results, balance = 0, count, 0, open_calls
    for index in range(count - 1, -1, -1):
        node = nodes[index]
        kept += price(node)
        keep, balance = index, balance - node.calls
        results += node.calls < 0
        if kept >= retain:
            break
    if keep <= first:
        return None
    # ``balance``: tool calls before ``keep`` awaiting a result at or after it.
    while keep > first and balance != 0:
        keep -= 1
        node = nodes[keep]
        kept += price(node)
        balance -= node.calls
        results += node.calls < 0
    if keep <= first:
        return None
    return Range(first, keep, kept, results)


def automatic_preview(
    meter: SessionMeter,
    measured: int,
    threshold: int | None,
    retain: int,
    folds: Sequence[Fold] = (),
    *,
    pruner: bool = True,
) -> FoldPreview:
    """The next automatic fold, were it to come now: the pruner's cuts (when it runs), then
    (while the measure is still at or past the point; at the point when it is not there
    yet) the compaction keeping ``retain`` tokens."""
    cuts = tuple(
        Cut(node.seq, node.tokens, after)
        for node in (meter.prunable.values() if pruner else ())
        if node.shape is not None and (after := pruned_price(node.shape)) is not None
    )
    cut = {c.seq: c.after for c in cuts}
    freed = sum(c.freed for c in cuts)
    compacts = threshold is None or max(measured, threshold) - freed >= threshold
    if not compacts:
        return FoldPreview("automatic", cuts, compacts=False, after=(measured - freed,) * 2)
    found = select_range(
        meter.nodes, meter.open_calls, retain, lambda node: cut.get(node.seq, node.tokens)
    )
    return _preview("automatic", meter, found, cuts, measured - freed, folds)


def manual_preview(meter: SessionMeter, measured: int, folds: Sequence[Fold] = ()) -> FoldPreview:
    """A Compact now: nothing pruned, nothing kept but the newest node (and what its tool
    calls need)."""
    found = select_range(meter.nodes, meter.open_calls, 0)
    return _preview("manual", meter, found, (), measured, folds)


def _preview(
    kind: str,
    meter: SessionMeter,
    found: Range | None,
    cuts: tuple[Cut, ...],
    measured: int,
    folds: Sequence[Fold],
) -> FoldPreview:
    if found is None:
        return FoldPreview(kind, cuts, compacts=False)
    nodes = meter.nodes
    shadowed = found.shadowed(nodes, meter.nodes_tokens - sum(cut.freed for cut in cuts))
    sizes = summary_sizes(folds)
    after = None
    if sizes:
        rest = measured - shadowed
        after = (max(0, rest + min(sizes)), max(0, rest + max(sizes)))
    return FoldPreview(
        kind,
        cuts,
        first=nodes[found.first],
        last=nodes[found.keep - 1],
        messages=found.keep - found.first,
        tool_pairs=meter.results - found.tail_results,
        shadowed_tokens=shadowed,
        retained_tokens=found.retained,
        after=after,
    )


def summary_sizes(folds: Sequence[Fold]) -> list[int]:
    """The prices of the session's last :data:`SUMMARIES` summaries."""
    sizes = [
        fold.checkpoint_tokens
        for fold in folds
        if fold.kind in COMPACTIONS and fold.status == "done" and fold.checkpoint_tokens
    ]
    return sizes[-SUMMARIES:]


def previewed(meter: SessionMeter, retain: int) -> Previewed | None:
    """What a compaction keeping ``retain`` tokens would shadow now, as the ledger keeps
    it beside what the engine then did (``None``: nothing)."""
    found = select_range(meter.nodes, meter.open_calls, retain)
    if found is None:
        return None
    nodes = meter.nodes
    return Previewed(
        nodes[found.first].seq,
        nodes[found.keep - 1].seq,
        found.shadowed(nodes, meter.nodes_tokens),
        found.keep - found.first,
    )
