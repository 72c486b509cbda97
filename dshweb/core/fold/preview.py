"""What the next compaction would take away, before it happens: the engine's own rules (DSH_FACTS
§7, read in the runtime's ``compaction-basic`` and ``tool-result-pruner``) applied to the
surface as it stands.

A compaction shadows one range of surface nodes (``selectCompactableRange``): from the
first node that is not the system prompt (a ``system/message`` at node 0 is never in it)
up to a tail it keeps, walked back from the newest node until the tail is priced at
``retainTokens`` or more, then further back until no tool call is cut from its result (the
cut before the tail's first node has every tool call before it answered). Nothing to
shadow, and no compaction, when the tail reaches the first node. The tokens shadowed are
the nodes' own prices (``compaction/summary.shadowedTokenCount``).

- An automatic compaction (:func:`automatic_preview`) runs the pruner first: every tool result
  on the surface whose text is over 8,192 code points is cut to its first 4,096 and last
  1,024 (:func:`~dshweb.core.fold.pricing.pruned_price`), each a ``compaction/prune``
  priced at the result's price; then, if the measure is still at or past the point, a
  compaction keeping ``retainTokens``.
- A manual Compact (:func:`manual_preview`) prunes nothing and keeps ``0``: everything but
  the newest node (and what its tool calls need).

The context after the compaction is the measure less what the prunes free and the range
shadows, plus a summary of the size the session's own summaries had (their smallest and
largest, an estimate: before the first one, unknown).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dshweb.core.fold.compactions import Compaction, Previewed
from dshweb.core.fold.known import OFF, UNKNOWN, CutKnown, Known
from dshweb.core.fold.meter import SessionMeter, SurfaceNode
from dshweb.core.fold.pricing import DEFAULT_CUT, PruneCut, pruned_price, shape_points

SYSTEM = "system/message"
SUMMARY_KINDS = frozenset({"automatic", "manual", "overflow"})
"""The compaction kinds that write a summary."""
SUMMARIES = 8
"""The session's last summaries whose sizes say what the next one will be."""


@dataclass(frozen=True, slots=True)
class Condition:
    """One setting's range that makes an outcome of the preview the one that comes."""

    setting: str
    """``thresholdTokens``, ``retainTokens`` or ``pruneThreshold``."""
    low: int | None
    high: int | None

    def as_json(self) -> dict[str, int | str | None]:
        return {"setting": self.setting, "low": self.low, "high": self.high}


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
class CompactionPreview:
    """What one compaction would do to the surface now."""

    kind: str
    """``automatic`` or ``manual``."""
    cuts: tuple[Cut, ...] = ()
    """The pruner's cuts, oldest first (an automatic compaction's first move)."""
    compacts: bool = True
    """Whether a summary follows (an automatic compaction's prunes may bring the measure under
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
    """The measure after the compaction, with the smallest and the largest of the session's
    recent summaries in the range's place; ``None`` before the session's first summary."""
    when: tuple[Condition, ...] = ()
    """What makes this the outcome, when the settings known leave more than one."""

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
            "when": [condition.as_json() for condition in self.when],
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


MAX_OUTCOMES = 4
"""The most outcomes a preview lists; past that it says which setting it does not know."""


@dataclass(frozen=True, slots=True)
class AutomaticPreview:
    """The next automatic compaction, as the settings known so far allow it: one outcome when
    they decide it, each outcome with what decides it (``when``) when they leave more
    than one open, none with ``unknown`` naming the setting when they leave too many."""

    outcomes: tuple[CompactionPreview, ...] = ()
    unknown: str | None = None
    """``retain``, ``pruner`` or ``point``: what must be known before it can say."""
    point: Known = UNKNOWN
    retain: Known = UNKNOWN
    cut: CutKnown = OFF

    @property
    def one(self) -> CompactionPreview | None:
        """The outcome, when the known settings leave only one."""
        return self.outcomes[0] if len(self.outcomes) == 1 else None

    def as_json(self) -> dict[str, Any]:
        return {
            "outcomes": [outcome.as_json() for outcome in self.outcomes],
            "unknown": self.unknown,
            "settings": {
                "thresholdTokens": self.point.as_json(),
                "retainTokens": self.retain.as_json(),
                "pruner": self.cut.as_json(),
            },
        }


def automatic_outcomes(
    meter: SessionMeter,
    measured: int,
    point: Known,
    retain: Known,
    cut: CutKnown,
    compactions: Sequence[Compaction] = (),
) -> AutomaticPreview:
    """The next automatic compaction, were it to come now (at the point, when the measure is
    not there yet): the pruner's cuts, then (while the measure is still at or past the
    point) the compaction keeping the retain; every outcome the known ranges of the
    point, the retain and the pruner's threshold allow."""
    said = AutomaticPreview(point=point, retain=retain, cut=cut)
    options = _prune_options(meter, cut)
    if options is None:
        return replace(said, unknown="pruner")
    outcomes: list[CompactionPreview] = []
    for cuts, when in options:
        freed = sum(c.freed for c in cuts)
        left = measured - freed
        for compacts, decided in _compacts(point, freed, left):
            if not compacts:
                outcomes.append(
                    CompactionPreview(
                        "automatic", cuts, False, after=(left, left), when=when + decided
                    )
                )
                continue
            ranges = _retained(meter, retain, {c.seq: c.after for c in cuts})
            if ranges is None:
                return replace(said, unknown="retain")
            for found, kept in ranges:
                preview = _preview("automatic", meter, found, cuts, left, compactions)
                outcomes.append(replace(preview, when=when + decided + kept))
        if len(outcomes) > MAX_OUTCOMES:
            break
    if len(outcomes) > MAX_OUTCOMES:
        worst = "pruner" if len(options) > 1 else "retain" if retain.exact is None else "point"
        return replace(said, unknown=worst)
    return replace(said, outcomes=tuple(outcomes))


def _prune_options(
    meter: SessionMeter, cut: CutKnown
) -> list[tuple[tuple[Cut, ...], tuple[Condition, ...]]] | None:
    """The sets of cuts the pruner's known threshold allows, each with the threshold's
    range that makes it (``None``: more than :data:`MAX_OUTCOMES`, or a result would be
    cut whose price after the cut the unknown head or tail leaves open)."""
    if not cut.on:
        return [((), ())]
    low, high = cut.threshold.low or 0, cut.threshold.high
    candidates = sorted(
        (node for node in meter.prunable.values() if node.shape is not None),
        key=lambda node: node.seq,
    )
    sizes = sorted({p for n in candidates if n.shape and (p := shape_points(n.shape)) > low})
    open_sizes = [p for p in sizes if high is None or p <= high]
    if len(open_sizes) + 1 > MAX_OUTCOMES:
        return None
    head, tail = cut.head.exact, cut.tail.exact
    if sizes and (head is None or tail is None):
        return None
    # Threshold ranges: [low, p1 − 1], [p1, p2 − 1], …, [pm, high]; each cuts what is over.
    edges = [low, *open_sizes]
    options: list[tuple[tuple[Cut, ...], tuple[Condition, ...]]] = []
    for index, at in enumerate(edges):
        upto = edges[index + 1] - 1 if index + 1 < len(edges) else high
        prune = PruneCut(at, head or 0, tail or 0)
        cuts = tuple(
            Cut(node.seq, node.tokens, after)
            for node in candidates
            if node.shape is not None and (after := pruned_price(node.shape, prune)) is not None
        )
        when: tuple[Condition, ...] = ()
        if len(edges) > 1:
            when = (Condition("pruneThreshold", at, upto),)
        options.append((cuts, when))
    return options


def _compacts(point: Known, freed: int, left: int) -> list[tuple[bool, tuple[Condition, ...]]]:
    """Whether a compaction follows the cuts: the measure left (``left``; at the point
    itself when the compaction comes as the measure reaches it) still at or past the point.
    Both, each with the point's range that makes it, when the point's range holds
    ``left``."""
    if freed <= 0:
        return [(True, ())]
    low, high = point.low, point.high
    if high is not None and high <= left:
        return [(True, ())]
    if low is not None and low > left:
        return [(False, ())]
    return [
        (True, (Condition("thresholdTokens", low, left),)),
        (False, (Condition("thresholdTokens", left + 1, high),)),
    ]


def _retained(
    meter: SessionMeter, retain: Known, cut: dict[int, int]
) -> list[tuple[Range | None, tuple[Condition, ...]]] | None:
    """Each range a compaction could shadow for a retain in the known range, with the
    retain's range that gives it (``None``: more than :data:`MAX_OUTCOMES`, or the
    retain is not bounded)."""
    low, high = retain.low or 0, retain.high
    if high is None:
        return None

    def price(node: SurfaceNode) -> int:
        return cut.get(node.seq, node.tokens)

    if low == high:
        return [(select_range(meter.nodes, meter.open_calls, low, price), ())]
    nodes = meter.nodes
    found: list[tuple[Range | None, tuple[int, int]]] = []
    tail = 0
    for index in range(len(nodes) - 1, -1, -1):
        below, tail = tail, tail + price(nodes[index])
        # A retain in (below, tail] (from 0 at the newest node) stops the walk here.
        start = 0 if index == len(nodes) - 1 else below + 1
        if tail < low or start > tail:  # (a node priced 0 stops no walk of its own)
            continue
        if start > high:
            break
        sub = (max(low, start), min(high, tail))
        one = select_range(nodes, meter.open_calls, sub[0], price)
        if found and _same(found[-1][0], one):
            found[-1] = (one, (found[-1][1][0], sub[1]))
        else:
            found.append((one, sub))
        if len(found) > MAX_OUTCOMES:
            return None
    if len(found) == 1:
        return [(found[0][0], ())]
    return [(one, (Condition("retainTokens", *sub),)) for one, sub in found]


def _same(a: Range | None, b: Range | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.first, a.keep) == (b.first, b.keep)


def automatic_preview(
    meter: SessionMeter,
    measured: int,
    threshold: int | None,
    retain: int,
    compactions: Sequence[Compaction] = (),
    *,
    pruner: PruneCut | None = DEFAULT_CUT,
) -> CompactionPreview:
    """The next automatic compaction under settings known exactly (the compaction point
    ``threshold``, ``retain``, the pruner's cut or ``None`` when it is off)."""
    point = Known.exactly(threshold, "profile") if threshold is not None else UNKNOWN
    cut = OFF
    if pruner is not None:
        cut = CutKnown(
            True,
            Known.exactly(pruner.threshold, "profile"),
            Known.exactly(pruner.head, "profile"),
            Known.exactly(pruner.tail, "profile"),
        )
    said = automatic_outcomes(
        meter, measured, point, Known.exactly(retain, "profile"), cut, compactions
    )
    assert said.one is not None  # settings known exactly leave one outcome
    return said.one


def manual_preview(
    meter: SessionMeter, measured: int, compactions: Sequence[Compaction] = ()
) -> CompactionPreview:
    """A Compact now: nothing pruned, nothing kept but the newest node (and what its tool
    calls need)."""
    found = select_range(meter.nodes, meter.open_calls, 0)
    return _preview("manual", meter, found, (), measured, compactions)


def _preview(
    kind: str,
    meter: SessionMeter,
    found: Range | None,
    cuts: tuple[Cut, ...],
    measured: int,
    compactions: Sequence[Compaction],
) -> CompactionPreview:
    if found is None:
        return CompactionPreview(kind, cuts, compacts=False)
    nodes = meter.nodes
    shadowed = found.shadowed(nodes, meter.nodes_tokens - sum(cut.freed for cut in cuts))
    sizes = summary_sizes(compactions)
    after = None
    if sizes:
        rest = measured - shadowed
        after = (max(0, rest + min(sizes)), max(0, rest + max(sizes)))
    return CompactionPreview(
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


def summary_sizes(compactions: Sequence[Compaction]) -> list[int]:
    """The prices of the session's last :data:`SUMMARIES` summaries."""
    sizes = [
        compaction.checkpoint_tokens
        for compaction in compactions
        if compaction.kind in SUMMARY_KINDS
        and compaction.status == "done"
        and compaction.checkpoint_tokens
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
