"""The ledger's records: one compaction of a session's context (a summary or a prune
pass), a ``/compact`` that compacted nothing, and one point of the pressure timeline.

Per compaction (:class:`Compaction`) the ledger keeps what was shadowed
(``shadowedTokenCount``, or the prunes' sum), the price of what replaced it, the meter's
projected tokens just before and right after, and the summariser's own usage and error; a
figure the log does not give is ``None``. A ``/compact`` that compacted nothing (refused
while the agent was busy, or nothing to compact) is kept apart as a
:class:`CompactCommand`, with its answer. Both are frozen values;
:mod:`dshweb.core.fold.ledger` says what counts as a compaction and builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from dshweb.core.fold.cost import CompactionCost, CostedCompaction, RateBook
from dshweb.core.fold.meter import Usage

CompactionKind = Literal["automatic", "manual", "overflow", "prune"]
PointRole = Literal["step", "before", "after", "now"]


@dataclass(frozen=True, slots=True)
class Previewed:
    """The range the preview said a compaction would shadow
    (:mod:`dshweb.core.fold.preview`), as it stood just before it began."""

    from_seq: int
    to_seq: int
    tokens: int
    messages: int


@dataclass(frozen=True, slots=True)
class Compaction:
    """One compaction of the context: a summary (of any kind but ``prune``) or a prune
    pass; token figures are ``None`` where the log has none."""

    kind: CompactionKind
    seq: int
    """``compaction/start``, or the pass's first ``compaction/prune``."""
    time: int | None
    turn: int | None = None
    compaction_id: str | None = None
    end_seq: int | None = None
    """``compaction/end``, or the pass's last replacing result; ``None`` while open."""
    end_time: int | None = None
    shadowed_tokens: int | None = None
    shadowed_nodes: int = 0
    checkpoint_tokens: int | None = None
    """The price of the replacing message (the prunes' replacements, summed)."""
    before: int | None = None
    """The meter's projected tokens just before the compaction."""
    after: int | None = None
    """The meter's projected tokens right after it."""
    summary_usage: Usage | None = None
    summary_model: str | None = None
    error: str | None = None
    prunes: int = 0
    command: str | None = None
    """The command that asked for it, as typed (``/compact …``)."""
    command_seq: int | None = None
    command_kind: str | None = None
    command_text: str | None = None
    """``command/done.text``: DSH's own answer (``Compacted 14 history items (~426 tokens).``)."""
    shadowed_range: tuple[int, int] | None = None
    """``compaction/summary.shadowedRange``: the first and last node the engine shadowed."""
    previewed: Previewed | None = None
    """What the preview said, from the log just before the compaction began."""
    cost: CompactionCost = field(default_factory=CompactionCost)
    """What it cost and saved, in tokens by slot (costed by a
    :class:`~dshweb.core.fold.cost.RateBook`)."""

    def costed(self, book: RateBook) -> CostedCompaction:
        """What it cost and saved, in dollars by ``book``."""
        return book.compaction(self.cost, self.summary_usage, self.saved)

    @property
    def as_previewed(self) -> bool | None:
        """Whether the engine shadowed what the preview said (``None``: not both known)."""
        said, done = self.previewed, self.shadowed_range
        if said is None or done is None or self.shadowed_tokens is None:
            return None
        return (said.from_seq, said.to_seq, said.tokens) == (*done, self.shadowed_tokens)

    @property
    def status(self) -> Literal["done", "failed", "open"]:
        if self.error is not None:
            return "failed"
        return "open" if self.end_seq is None else "done"

    @property
    def dropped(self) -> int | None:
        """What the compaction bought: projected before − after."""
        if self.before is None or self.after is None:
            return None
        return self.before - self.after

    @property
    def saved(self) -> int | None:
        """Shadowed − checkpoint: what the compaction should buy by the shadow-price rule."""
        if self.shadowed_tokens is None or self.checkpoint_tokens is None:
            return None
        return self.shadowed_tokens - self.checkpoint_tokens


@dataclass(frozen=True, slots=True)
class CompactionTally:
    """What the compactions no longer kept one by one add up to (a long session's oldest): the
    counts every page, the metrics and the CLI show go on counting them."""

    compactions: int = 0
    summaries: int = 0
    """Summaries that ended well (any kind but a prune pass)."""
    failed: int = 0
    prune_passes: int = 0
    prunes: int = 0
    dropped: int = 0
    """Sum of each compaction's projected before − after, where known."""
    done: tuple[tuple[CompactionKind, int], ...] = ()
    """Compactions that ended well, by kind (kinds with none left out)."""
    freed: int = 0
    """Sum of what the compactions that ended well freed (before − after, when positive)."""
    shadowed: tuple[tuple[CompactionKind, int], ...] = ()
    """What the compactions that ended well shadowed (DSH's ``shadowedTokenCount``; a prune
    pass's, its results' sum), by kind (kinds with none left out)."""

    def add(self, compaction: Compaction) -> CompactionTally:
        done = dict(self.done)
        shadowed = dict(self.shadowed)
        freed = self.freed
        if compaction.status == "done":
            kind = compaction.kind
            done[kind] = done.get(kind, 0) + 1
            freed += max(0, compaction.dropped or 0)
            if compaction.shadowed_tokens:
                shadowed[kind] = shadowed.get(kind, 0) + compaction.shadowed_tokens
        pruning = compaction.kind == "prune"
        return CompactionTally(
            compactions=self.compactions + 1,
            summaries=self.summaries + (not pruning and compaction.status == "done"),
            failed=self.failed + (compaction.status == "failed"),
            prune_passes=self.prune_passes + pruning,
            prunes=self.prunes + (compaction.prunes if pruning else 0),
            dropped=self.dropped + (compaction.dropped or 0),
            done=tuple(sorted(done.items())),
            freed=freed,
            shadowed=tuple(sorted(shadowed.items())),
        )


@dataclass(frozen=True, slots=True)
class CompactCommand:
    """A compaction command that compacted nothing, with DSH's answer."""

    seq: int
    time: int | None
    command: str
    kind: str
    text: str | None
    done_seq: int


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    """One reading of the projected tokens on the pressure timeline: after a step, just
    before or right after a compaction, or now."""

    seq: int
    time: int | None
    tokens: int
    role: PointRole
    compaction: int | None = None
    """The compaction's number (1-based, as the ledger lists it) for a before/after point."""
