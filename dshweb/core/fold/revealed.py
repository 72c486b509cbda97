"""What the engine's own acts in a log reveal of the retain and the pruner's cut it ran
with, as :class:`~dshweb.core.fold.point.Decisions` reveals its compaction point.

A ``dsh --patch`` is never recorded (DSH_FACTS §12), so a session's profile may not be
what its engine ran. Each act bounds a setting by the engine's own rules (DSH_FACTS §7,
read in the runtime's ``compaction-basic`` and ``tool-result-pruner``):

- **The retain**, by every automatic summary (``selectCompactableRange``): walking back
  from the newest node, the engine stopped at the first node ``k0`` whose tail (the
  prices of ``k0`` and every node after it) reached ``retainTokens``, then moved back to
  ``k`` while a tool call before the cut waited for a result after it. The summary's
  ``shadowedRange`` ends just before ``k``; ``k0`` lies between ``k`` and the first node
  after ``k`` where nothing waits (``b``), so ``tail(b) < retainTokens <= tail(k)``.
  The bounds are kept per model, window and reserve (the engine resolves its policy per
  model), and start over when a summary contradicts them (a profile changed under the
  session). For one model, ``retainTokens`` is either an absolute figure, the same
  under every window and reserve, or ``floor(messageBudget × retainRatio)``, the same
  ratio of each one's message budget (window − reserve): what the summaries under one
  bound, another of the model inherits under each rule (:meth:`RetainSeen.at`): the
  range either allows, once it agrees with all of them (a rule none allows is out).
  Another model's summaries say nothing (a ``modelPolicies`` entry may set its own).
- **The pruner's head and tail**, exactly, by any replacing result: its text is the
  original's first ``headChars`` code points, the marker, and its last ``tailChars``.
- **The pruner's threshold**, from both sides: every result it cut had more code points
  than the threshold; every result a pass left whole had no more. A pass is a pre-step
  that pruned, or a compaction (the pruner, when it runs, goes first: an automatic one
  and one recovering from an overflow alike).

Kept per session and folded with it; reading them costs nothing per request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dshweb.core.fold.known import CutKnown, Known
from dshweb.core.fold.meter import SessionMeter, SurfaceNode, surface_message
from dshweb.core.fold.point import BETWEEN_STEPS, EARLIER_BASES, Basis, basis_of
from dshweb.core.fold.pricing import PRUNE_MARKER, PruneCut, shape_points
from dshweb.core.log.decode import raw_as
from dshweb.core.log.wire import (
    AnyEvent,
    Block,
    CompactionPrune,
    CompactionStart,
    CompactionSummary,
    Replace,
    StepStart,
    ToolResult,
)

MARKER_POINTS = len(PRUNE_MARKER)


@dataclass(slots=True)
class RetainBounds:
    """Bounds on ``retainTokens`` (``low``..``high``, both included) from the automatic
    summaries under one window and reserve."""

    low: int = 0
    high: int | None = None
    summaries: int = 0


@dataclass(slots=True)
class RetainSeen:
    """Bounds on ``retainTokens`` from the automatic summaries, per model, window and
    reserve."""

    by_basis: dict[Basis, RetainBounds] = field(default_factory=dict)

    def observe(self, meter: SessionMeter, last_seq: Any) -> None:
        """An automatic summary whose range ends at ``last_seq``, on ``meter``'s surface
        as the engine priced it (after the pass's prunes)."""
        nodes = meter.nodes
        last = _index_of(meter, last_seq)
        if last is None:
            return
        keep = last + 1
        tail = sum(node.tokens for node in nodes[keep:])
        # Where nothing waits: walking forward from ``keep``, the balance of calls before
        # each node still waiting for a result at or after it.
        balance = meter.open_calls - sum(node.calls for node in nodes[keep:])
        after = tail
        low = 0
        for index in range(keep, len(nodes)):
            balance += nodes[index].calls
            after -= nodes[index].tokens
            if index + 1 < len(nodes) and balance == 0:
                low = after + 1
                break
        basis = basis_of(meter)
        seen = self.by_basis.get(basis)
        if seen is None or low > (seen.high if seen.high is not None else low) or tail < seen.low:
            self.by_basis.pop(basis, None)
            self.by_basis[basis] = RetainBounds(low, tail, 1)
            while len(self.by_basis) > EARLIER_BASES:  # the oldest first
                del self.by_basis[next(iter(self.by_basis))]
        else:
            seen.low = max(seen.low, low)
            seen.high = tail if seen.high is None else min(seen.high, tail)
            seen.summaries += 1

    def at(self, basis: Basis) -> RetainBounds | None:
        """What the summaries of ``basis``'s model allow the retain under ``basis``: the
        range of each rule (one absolute figure; one ratio of the message budget) that
        all of them allow, the two taken together; ``None`` before any summary of the
        model. Where no rule allows them all (a profile changed under the session), the
        summaries under ``basis`` alone."""
        model = {under: seen for under, seen in self.by_basis.items() if under.model == basis.model}
        if not model:
            return None
        summaries = sum(seen.summaries for seen in model.values())
        ranges = [
            found
            for rule in (_same_figure, _same_ratio)
            if (found := _allowed(model, basis, rule)) is not None
        ]
        if not ranges:
            own = self.by_basis.get(basis)
            return None if own is None else RetainBounds(own.low, own.high, own.summaries)
        low = min(found[0] for found in ranges)
        highs = [found[1] for found in ranges]
        high = None if None in highs else max(h for h in highs if h is not None)
        return RetainBounds(low, high, summaries)


_Rule = Callable[[RetainBounds, Basis, Basis], "tuple[int, int | None] | None"]


def _same_figure(seen: RetainBounds, _: Basis, __: Basis) -> tuple[int, int | None] | None:
    """An absolute ``retainTokens``: the same figure under every window."""
    return seen.low, seen.high


def _same_ratio(seen: RetainBounds, under: Basis, to: Basis) -> tuple[int, int | None] | None:
    """``floor(budget × retainRatio)``: ``low..high`` under a budget ``B`` holds the ratio
    in ``[low / B, (high + 1) / B)``, so ``floor(B' × ratio)`` under ``B'``; ``None``
    (no bound) where either window is not known or leaves no budget."""
    if under.window is None or to.window is None:
        return None
    budget, target = under.window - under.reserved, to.window - to.reserved
    if budget <= 0 or target <= 0:
        return None
    low = target * seen.low // budget
    high = None if seen.high is None else -(-target * (seen.high + 1) // budget) - 1
    return low, high


def _allowed(
    by_basis: dict[Basis, RetainBounds], basis: Basis, rule: _Rule
) -> tuple[int, int | None] | None:
    """The retain under ``basis`` that every window's summaries allow by ``rule``;
    ``None`` when they allow none."""
    low, high = 0, None
    for under, seen in by_basis.items():
        bound = rule(seen, under, basis)
        if bound is None:
            continue
        low = max(low, bound[0])
        if bound[1] is not None:
            high = bound[1] if high is None else min(high, bound[1])
        if high is not None and high < low:
            return None
    return low, high


def _index_of(meter: SessionMeter, seq: Any) -> int | None:
    """The index of the surface node ``seq`` names (searched from the tail, where the
    nodes a fold or a prune names are)."""
    seqs = meter.node_seqs
    try:  # the last one that is ``seq`` (a reversed copy is searched in C, not a loop)
        return len(seqs) - 1 - seqs[::-1].index(seq)
    except ValueError:
        return None


@dataclass(slots=True)
class CutSeen:
    """What the pruner's acts show of its cut: ``head`` and ``tail`` once it cut, and
    its threshold between ``whole`` (the most code points of a result a pass left
    whole) and ``pruned`` − 1 (the fewest of one it cut)."""

    head: int | None = None
    tail: int | None = None
    pruned: int | None = None
    whole: int | None = None
    """Only from passes known to have run the pruner (see :attr:`CutSeen.prunes`)."""
    whole_if_on: int | None = None
    """From compactions whose pre-step pruned nothing: a bound only if the pruner runs."""
    prunes: int = 0

    def cut(self, node: SurfaceNode | None) -> None:
        """The pruner cut ``node`` (its ``compaction/prune``)."""
        self.prunes += 1
        if node is not None and node.shape is not None:
            points = shape_points(node.shape)
            self.pruned = points if self.pruned is None else min(self.pruned, points)

    def replaced(self, event: ToolResult) -> None:
        """The pruner's replacing result: its text shows the head and tail it kept."""
        message = surface_message(event)
        content = message.content if message is not None else None
        if not isinstance(content, list):
            return
        texts = [b.text or "" for raw in content if (b := raw_as(raw, Block)) and b.type == "text"]
        text = "".join(texts)
        at = text.find(PRUNE_MARKER)
        if at < 0 or text.find(PRUNE_MARKER, at + 1) >= 0:
            return  # no marker, or more than one: which one is the pruner's is not known
        self.head, self.tail = at, len(text) - at - MARKER_POINTS

    def passed(self, meter: SessionMeter, *, pruned: bool) -> None:
        """A pass of the pruner over the surface ended (``pruned``: it cut something):
        every result on it now is within the threshold."""
        largest = max(
            (shape_points(n.shape) for n in meter.prunable.values() if n.shape), default=0
        )
        if pruned:
            self.whole = largest if self.whole is None else max(self.whole, largest)
        else:
            self.whole_if_on = (
                largest if self.whole_if_on is None else max(self.whole_if_on, largest)
            )


@dataclass(slots=True)
class Revealed:
    """The retain and the cut as the engine's acts show them, folded with the log."""

    retain: RetainSeen
    cut: CutSeen
    in_step: bool = False
    pruning: bool = False
    """The pre-step under way pruned."""
    automatic: Any = None
    """The id of the automatic compaction under way (``None``: none, or another kind)."""

    @classmethod
    def new(cls) -> Revealed:
        return cls(RetainSeen(), CutSeen())

    def observe(self, event: AnyEvent, meter: SessionMeter, *, overflow: bool) -> None:
        """Look at ``event`` before ``meter`` folds it (``overflow``: a compaction now
        would recover from a refused request, as the point's decisions tell)."""
        kind = type(event)
        if kind is CompactionPrune:
            data = event.data  # type: ignore[union-attr]
            seqs = (data.shadowed_seqs if data is not None else None) or []
            index = _index_of(meter, seqs[0]) if len(seqs) == 1 else None
            node = meter.nodes[index] if index is not None else None
            self.cut.cut(node)
            self.pruning = True
        elif kind is ToolResult and self.pruning and isinstance(event.surface_op, Replace):  # type: ignore[union-attr]
            self.cut.replaced(event)  # type: ignore[arg-type]
        elif kind is CompactionStart:
            data = event.data  # type: ignore[union-attr]
            automatic = data is not None and data.turn is not None
            if automatic and (overflow or not self.in_step):
                self.cut.passed(meter, pruned=self.pruning)
            self.pruning = False
            self.automatic = (
                data.compaction_id if automatic and not (overflow or self.in_step) else None
            )
        elif kind is CompactionSummary:
            data = event.data  # type: ignore[union-attr]
            shadowed = data.shadowed_range if data is not None else None
            if shadowed is not None and data is not None and data.compaction_id == self.automatic:
                self.retain.observe(meter, shadowed.end)
            self.automatic = None
        elif kind is StepStart:
            if self.pruning:  # a pass that pruned and needed no summary
                self.cut.passed(meter, pruned=True)
            self.in_step, self.pruning = True, False
        elif kind in BETWEEN_STEPS:
            self.in_step = self.pruning = False


def retain_known(profile: int | None, point: Known, seen: RetainSeen, basis: Basis) -> Known:
    """The retain a summary under ``basis`` now would keep: the profile's, unless the
    summaries rule it out (:meth:`RetainSeen.at`), or the point shows the profile's
    settings do not apply (a profile's retain inside the summaries' range is then no
    more likely than any other): the range the summaries allow, or before any, unknown
    (anything under the point)."""
    below = max(0, point.high - 1) if point.high is not None else None
    trusted = point.source in ("profile", "catalogue")
    bounds = seen.at(basis)
    if bounds is not None:
        high = bounds.high if below is None or bounds.high is None else min(bounds.high, below)
        if (
            profile is not None
            and trusted
            and bounds.low <= profile
            and (high is None or profile <= high)
        ):
            return Known.exactly(profile, "profile")
        if high is not None and high < bounds.low:
            high = bounds.high  # the point's range and the summaries disagree: trust them
        return Known(bounds.low, high, "inferred")
    if profile is not None and point.source in ("profile", "catalogue"):
        return Known.exactly(profile, "profile")
    return Known(0, below, "unknown")


def cut_known(profile: PruneCut | None, seen: CutSeen, point: Known) -> CutKnown:
    """The pruner's cut: the profile's where nothing the pruner did contradicts it, else
    what its cuts and the results it left whole allow. When the point shows the
    profile's settings do not apply (a ``dsh --patch`` the log does not record), the
    profile says nothing of the pruner either."""
    if point.source not in ("profile", "catalogue"):
        profile, trusted = None, False
    else:
        trusted = True
    if profile is None and trusted and not seen.prunes:
        return CutKnown(
            False, Known(source="profile"), Known(source="profile"), Known(source="profile")
        )
    whole = seen.whole or 0
    if profile is not None or seen.prunes or not trusted:
        whole = max(whole, seen.whole_if_on or 0)
    floor = MARKER_POINTS
    if seen.head is not None and seen.tail is not None:
        floor = seen.head + MARKER_POINTS + seen.tail
    low = max(whole, floor)
    high = seen.pruned - 1 if seen.pruned is not None else None
    if high is not None and high < low:  # a profile changed under the session
        low = min(low, high)
    if (
        profile is not None
        and profile.threshold >= low
        and (high is None or profile.threshold <= high)
    ):
        threshold = Known.exactly(profile.threshold, "profile")
    else:
        threshold = Known(low, high, "inferred")
    return CutKnown(
        True,
        threshold,
        _part(seen.head, profile.head if profile is not None else None, threshold),
        _part(seen.tail, profile.tail if profile is not None else None, threshold),
    )


def _part(seen: int | None, profile: int | None, threshold: Known) -> Known:
    """A head or a tail: as the pruner's replacements showed it, else the profile's while
    its threshold holds."""
    if seen is not None:
        return Known.exactly(seen, "profile" if seen == profile else "inferred")
    if profile is not None and threshold.source == "profile":
        return Known.exactly(profile, "profile")
    return Known(source="unknown")
