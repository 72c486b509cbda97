"""The sessions list: its order, and one page of it for a query.

Pure, no Django. :func:`session_tree` gives the list's natural order (newest activity
first, each sub-agent under its parent); :class:`SessionList` filters, sorts and pages
it for a :class:`~.query.ListQuery` (:meth:`SessionList.page`), and counts the
whole home by band and by live/idle. A :class:`SessionList` is built once per view of
the home and keeps what every query shares (the counts, search texts, flat orders), so
a page of a 5,000-session home costs a pass over the entries, no sort.

- Activity order keeps the tree under a filter: a session that matches stays at its
  place and depth even when its parent does not match (filtering never moves a row).
- Percent and headroom orders are flat (every row at depth 0): fullest first, or least
  room before the compaction point first; sessions without the figure come last, and
  ties go newest activity first, then by id.
- The page number is clamped to the pages there are; an empty list has one page.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from dshweb.core.fold.gauge import Band, ContextGauge, context_gauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.query import ListQuery, SortKey, matches, search_text

BANDS = (Band.AMPLE, Band.MODERATE, Band.TIGHT, Band.CRITICAL, Band.UNKNOWN)
"""The bands in the order the counts show them."""


@dataclass(frozen=True, slots=True)
class SessionEntry:
    """One row of the sessions list: sub-agents follow their parent, one level deeper."""

    snapshot: SessionSnapshot
    gauge: ContextGauge
    depth: int
    orphan: bool
    """A sub-agent listed at the top: its parent is not in this home (or the chain loops)."""


def session_tree(
    snapshots: Sequence[SessionSnapshot],
    gauge_of: Callable[[SessionSnapshot], ContextGauge] = context_gauge,
) -> list[SessionEntry]:
    """Sessions in list order: newest activity first, each sub-agent right under its parent.

    A parent is placed by the newest activity anywhere in its subtree, so a session whose
    sub-agent is busy comes first. Sub-agents whose parent is missing stay at the top
    level, marked ``orphan``; a broken parent chain that loops is cut where it repeats.
    """
    by_id = {s.session_id: s for s in snapshots}
    children: dict[str, list[SessionSnapshot]] = {}
    roots: list[SessionSnapshot] = []
    for shot in snapshots:
        parent = shot.parent_session
        if parent is not None and parent in by_id and parent != shot.session_id:
            children.setdefault(parent, []).append(shot)
        else:
            roots.append(shot)

    newest: dict[str, int] = {}

    def subtree_newest(shot: SessionSnapshot, seen: frozenset[str]) -> int:
        if shot.session_id in newest:
            return newest[shot.session_id]
        value = shot.last_time or 0
        for child in children.get(shot.session_id, []):
            if child.session_id not in seen:
                value = max(value, subtree_newest(child, seen | {child.session_id}))
        newest[shot.session_id] = value
        return value

    def order(group: list[SessionSnapshot]) -> list[SessionSnapshot]:
        return sorted(
            group, key=lambda s: (-subtree_newest(s, frozenset({s.session_id})), s.session_id)
        )

    entries: list[SessionEntry] = []
    placed: set[str] = set()

    def place(shot: SessionSnapshot, depth: int) -> None:
        placed.add(shot.session_id)
        orphan = depth == 0 and shot.parent_session is not None
        entries.append(SessionEntry(shot, gauge_of(shot), depth, orphan))
        for child in order(children.get(shot.session_id, [])):
            if child.session_id not in placed:
                place(child, depth + 1)

    for root in order(roots):
        place(root, 0)
    # Sessions only reachable through a parent loop: show them rather than lose them.
    for shot in order([s for s in snapshots if s.session_id not in placed]):
        if shot.session_id not in placed:
            place(shot, 0)
    return entries


@dataclass(frozen=True, slots=True)
class ListCounts:
    """The whole home, whatever the query: sessions by band and by live/idle."""

    total: int = 0
    live: int = 0
    bands: tuple[tuple[Band, int], ...] = tuple((band, 0) for band in BANDS)

    @property
    def idle(self) -> int:
        return self.total - self.live


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of the list for a query: its rows in order, and where it stands."""

    query: ListQuery
    """The query with its page number clamped to the pages there are."""
    rows: tuple[SessionEntry, ...]
    matched: int
    """Sessions the query shows, on every page."""
    pages: int
    offset: int
    """Rows before this page."""
    counts: ListCounts

    @property
    def page(self) -> int:
        return self.query.page

    @property
    def total(self) -> int:
        return self.counts.total

    @property
    def first(self) -> int:
        """The 1-based position of the page's first row (0 when it has none)."""
        return self.offset + 1 if self.rows else 0

    @property
    def last(self) -> int:
        return self.offset + len(self.rows)

    @property
    def previous_page(self) -> int | None:
        return self.page - 1 if self.page > 1 else None

    @property
    def next_page(self) -> int | None:
        return self.page + 1 if self.page < self.pages else None

    @property
    def layout(self) -> tuple[object, ...]:
        """Everything the page shows except the rows' own figures: which rows, in which
        order and at which depth, the page, the page count, and whether the home and the
        query are empty. While it stays the same, an update need only replace rows."""
        return (
            tuple((e.snapshot.session_id, e.depth, e.orphan) for e in self.rows),
            self.page,
            self.pages,
            self.total == 0,
            self.matched == 0,
        )

    def page_numbers(self, around: int = 2) -> tuple[int | None, ...]:
        """The pager's numbers: the first, the last, and ``around`` on each side of this
        page; ``None`` where two or more pages are left out (a gap of one is shown)."""
        wanted = {1, self.pages, *range(self.page - around, self.page + around + 1)}
        shown = sorted(n for n in wanted if 1 <= n <= self.pages)
        numbers: list[int | None] = []
        previous = 0
        for number in shown:
            if number - previous == 2:
                numbers.append(number - 1)
            elif number - previous > 2:
                numbers.append(None)
            numbers.append(number)
            previous = number
        return tuple(numbers)


class SessionList:
    """The home's sessions in tree order (:func:`session_tree`), ready to be paged.

    Immutable once built; what it derives is computed on first use and kept (a race
    computes it twice, to the same value).
    """

    def __init__(self, entries: Sequence[SessionEntry]) -> None:
        self.entries = tuple(entries)

    @cached_property
    def counts(self) -> ListCounts:
        bands = dict.fromkeys(BANDS, 0)
        live = 0
        for entry in self.entries:
            bands[entry.gauge.band] += 1
            live += entry.snapshot.live
        return ListCounts(len(self.entries), live, tuple(bands.items()))

    @cached_property
    def _texts(self) -> tuple[str, ...]:
        return tuple(search_text(entry.snapshot) for entry in self.entries)

    @cached_property
    def _by_percent(self) -> tuple[int, ...]:
        def key(i: int) -> tuple[bool, int, int, str]:
            shot, percent = self.entries[i].snapshot, self.entries[i].gauge.percent
            return (percent is None, -(percent or 0), -(shot.last_time or 0), shot.session_id)

        return tuple(sorted(range(len(self.entries)), key=key))

    @cached_property
    def _by_headroom(self) -> tuple[int, ...]:
        def key(i: int) -> tuple[bool, int, int, str]:
            shot, headroom = self.entries[i].snapshot, self.entries[i].gauge.headroom
            return (headroom is None, headroom or 0, -(shot.last_time or 0), shot.session_id)

        return tuple(sorted(range(len(self.entries)), key=key))

    def _order(self, sort: SortKey) -> Sequence[int]:
        if sort is SortKey.PERCENT:
            return self._by_percent
        if sort is SortKey.HEADROOM:
            return self._by_headroom
        return range(len(self.entries))

    def page(self, query: ListQuery) -> ListPage:
        entries = self.entries
        order = self._order(query.sort)
        if query.filtering:
            terms = query.terms
            texts = self._texts if terms else ("",) * len(entries)
            order = [
                i
                for i in order
                if matches(
                    query,
                    terms,
                    live=entries[i].snapshot.live,
                    band=entries[i].gauge.band,
                    text=texts[i],
                )
            ]
        matched = len(order)
        pages = max(1, math.ceil(matched / query.per_page))
        page = min(query.page, pages)
        offset = (page - 1) * query.per_page
        rows = [entries[i] for i in order[offset : offset + query.per_page]]
        if query.sort is not SortKey.ACTIVITY:
            rows = [replace(row, depth=0) if row.depth else row for row in rows]
        return ListPage(query.on_page(page), tuple(rows), matched, pages, offset, self.counts)
