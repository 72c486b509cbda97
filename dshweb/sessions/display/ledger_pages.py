"""The ledger a page at a time, newest first, and the newest few refused commands.

A page is addressed by ``before``, a fold number: it holds the folds numbered below it,
the highest first, so an address keeps pointing at the same folds while the session
grows (fold numbers are the ledger's 1-based positions and never change). ``before=None``
is the newest page. Pure: folds in, numbered folds out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dshweb.core.fold.compactions import CompactCommand, Compaction

LEDGER_PAGE_SIZE = 25
"""Folds per page of the ledger card."""
REFUSED_SHOWN = 5
"""Refused ``/compact`` commands listed on the page (the newest); the rest are counted."""


@dataclass(frozen=True, slots=True)
class NumberedCompaction:
    number: int
    """1-based, in the order the folds happened (the newest has the highest)."""
    compaction: Compaction


@dataclass(frozen=True, slots=True)
class LedgerPage:
    rows: tuple[NumberedCompaction, ...]
    """Newest first."""
    total: int
    """Folds in the whole ledger."""
    before: int
    """This page holds folds numbered below this (``total + 1`` for the newest page)."""
    older: int | None
    """``before`` of the next older page; ``None`` when this page reaches fold 1."""
    newer: int | None
    """``before`` of the next newer page; ``None`` on the newest page."""

    @property
    def newest(self) -> bool:
        return self.newer is None

    @property
    def first(self) -> int | None:
        """The lowest fold number on the page."""
        return self.rows[-1].number if self.rows else None

    @property
    def last(self) -> int | None:
        """The highest fold number on the page."""
        return self.rows[0].number if self.rows else None


def ledger_page(
    compactions: Sequence[Compaction],
    *,
    before: int | None = None,
    size: int = LEDGER_PAGE_SIZE,
    first: int = 1,
) -> LedgerPage:
    """The page of ``folds`` (numbered from ``first``: the ledger keeps a long session's
    newest folds) below fold number ``before``, clamped to ``first .. total + 1``."""
    if size < 1:
        raise ValueError(f"a page holds at least one fold, not {size}")
    total = first - 1 + len(compactions)
    end = total + 1 if before is None else min(max(before, first), total + 1)
    start = max(end - size, first)
    rows = tuple(
        NumberedCompaction(n, compactions[n - first]) for n in range(end - 1, start - 1, -1)
    )
    return LedgerPage(
        rows=rows,
        total=total,
        before=end,
        older=start if start > first else None,
        newer=None if end > total else min(end + size, total + 1),
    )


@dataclass(frozen=True, slots=True)
class RefusedTail:
    shown: tuple[CompactCommand, ...]
    """The newest refused commands, newest first."""
    more: int
    """How many older ones are not shown."""


def refused_tail(
    refused: Sequence[CompactCommand], *, limit: int = REFUSED_SHOWN, earlier: int = 0
) -> RefusedTail:
    """The newest ``limit`` refused commands (newest first) and how many more there are
    (``earlier`` ones no longer kept included)."""
    shown = tuple(reversed(refused[-limit:])) if limit > 0 else ()
    return RefusedTail(shown, earlier + len(refused) - len(shown))
