"""The sessions list: its order, and one page of it for a query.

Pure, no Django. :func:`session_tree` gives the list's natural order of one home (newest
activity first, each sub-agent under its parent), and :func:`merged_trees` that of
several homes (each session's place in its own home's tree kept, the homes interleaved by
activity); :class:`SessionList` filters, sorts and pages it for a
:class:`~.query.ListQuery` (:meth:`SessionList.page`), and counts every session by band,
by live/idle and by home. A :class:`SessionList` is built once per view of the homes and
keeps what every query shares (the counts, search texts, flat orders), so a page of a
5,000-session list costs a pass over the entries, no sort.

- Activity order keeps the tree under a filter: a session that matches stays at its
  place and depth even when its parent does not match (filtering never moves a row).
- Percent and headroom orders are flat (every row at depth 0): fullest first, or least
  room before the compaction point first; sessions without the figure come last, and
  ties go newest activity first, then by home and id.
- The page number is clamped to the pages there are; an empty list has one page.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from dshweb.core.fold.gauge import Band, ContextGauge, context_gauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.homes import DEFAULT_HOME_NAME
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
    home: str = DEFAULT_HOME_NAME
    """The name of the session's home (a session id is unique only within its home)."""

    @property
    def key(self) -> tuple[str, str]:
        """(home, session id): the session among every home's."""
        return (self.home, self.snapshot.session_id)


def session_tree(
    snapshots: Sequence[SessionSnapshot],
    gauge_of: Callable[[SessionSnapshot], ContextGauge] = context_gauge,
    home: str = DEFAULT_HOME_NAME,
) -> list[SessionEntry]:
    """Sessions in list order: newest activity first, each sub-agent right under its parent.

    A parent is placed by the newest activity anywhere in its subtree, so a session whose
    sub-agent is busy comes first. Sub-agents whose parent is missing stay at the top
    level, marked ``orphan``; a broken parent chain that loops is cut where it repeats.
    """
    children, roots = _family(snapshots)
    newest: dict[str, int] = {}

    def subtree_newest(shot: SessionSnapshot, seen: frozenset[str]) -> int:
        if shot.session_id in newest:
            return newest[shot.session_id]
        value = shot.last_time or 0
        for child in children.get(shot.session_id, ()):
            if child.session_id not in seen:
                value = max(value, subtree_newest(child, seen | {child.session_id}))
        newest[shot.session_id] = value
        return value

    def key(shot: SessionSnapshot) -> tuple[int, str]:
        # Most sessions have no sub-agent: their subtree is themselves.
        if shot.session_id not in children:
            return (-(shot.last_time or 0), shot.session_id)
        return (-subtree_newest(shot, frozenset({shot.session_id})), shot.session_id)

    def order(group: list[SessionSnapshot]) -> list[SessionSnapshot]:
        return sorted(group, key=key)

    entries: list[SessionEntry] = []
    placed: set[str] = set()

    def place(shot: SessionSnapshot, depth: int) -> None:
        placed.add(shot.session_id)
        orphan = depth == 0 and shot.parent_session is not None
        entries.append(SessionEntry(shot, gauge_of(shot), depth, orphan, home))
        below = children.get(shot.session_id)
        if below is not None:
            for child in order(below):
                if child.session_id not in placed:
                    place(child, depth + 1)

    for root in order(roots):
        place(root, 0)
    # Sessions only reachable through a parent loop: show them rather than lose them.
    for shot in order([s for s in snapshots if s.session_id not in placed]):
        if shot.session_id not in placed:
            place(shot, 0)
    return entries


def _family(
    snapshots: Sequence[SessionSnapshot],
) -> tuple[dict[str, list[SessionSnapshot]], list[SessionSnapshot]]:
    """The sub-agents of each session whose parent is listed, and every other session."""
    ids = {s.session_id for s in snapshots}
    children: dict[str, list[SessionSnapshot]] = {}
    roots: list[SessionSnapshot] = []
    for shot in snapshots:
        parent = shot.parent_session
        if parent is not None and parent in ids and parent != shot.session_id:
            children.setdefault(parent, []).append(shot)
        else:
            roots.append(shot)
    return children, roots


def merged_trees(trees: Sequence[Sequence[SessionEntry]]) -> list[SessionEntry]:
    """Several homes' trees (each in :func:`session_tree` order) as one list: each top-level
    session with the sub-agents under it, newest activity anywhere in it first, then by
    home and id; a pass over the entries, no sort."""
    if len(trees) == 1:
        return list(trees[0])
    groups = heapq.merge(*(_groups(tree) for tree in trees))
    return [entry for *_, group in groups for entry in group]


def _groups(
    tree: Sequence[SessionEntry],
) -> Iterator[tuple[int, str, str, int, list[SessionEntry]]]:
    """Each top-level entry of ``tree`` with the deeper ones after it, keyed as
    :func:`session_tree` ordered them (its newest activity first, then its id)."""
    group: list[SessionEntry] = []
    for place, entry in enumerate([*tree, None]):
        if group and (entry is None or entry.depth == 0):
            newest = max(e.snapshot.last_time or 0 for e in group)
            head = group[0]
            yield (-newest, head.home, head.snapshot.session_id, place, group)
            group = []
        if entry is not None:
            group.append(entry)


@dataclass(frozen=True, slots=True)
class ListCounts:
    """Every session listed, whatever the query: by band, by live/idle and by home."""

    total: int = 0
    live: int = 0
    bands: tuple[tuple[Band, int], ...] = tuple((band, 0) for band in BANDS)
    homes: tuple[tuple[str, int], ...] = ()
    """Sessions per home, by name (the homes listed, even those with none)."""

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
            tuple((e.home, e.snapshot.session_id, e.depth, e.orphan) for e in self.rows),
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
    """The sessions of one or more homes in tree order (:func:`session_tree`,
    :func:`merged_trees`), ready to be paged; ``homes`` names the homes listed.

    Immutable once built; what it derives is computed on first use and kept (a race
    computes it twice, to the same value).
    """

    def __init__(
        self, entries: Sequence[SessionEntry], homes: Sequence[str] = (DEFAULT_HOME_NAME,)
    ) -> None:
        self.entries = tuple(entries)
        self.homes = tuple(sorted(homes))

    @cached_property
    def counts(self) -> ListCounts:
        bands = dict.fromkeys(BANDS, 0)
        homes = dict.fromkeys(self.homes, 0)
        live = 0
        for entry in self.entries:
            bands[entry.gauge.band] += 1
            homes[entry.home] = homes.get(entry.home, 0) + 1
            live += entry.snapshot.live
        return ListCounts(
            len(self.entries), live, tuple(bands.items()), tuple(sorted(homes.items()))
        )

    @cached_property
    def _texts(self) -> tuple[str, ...]:
        return tuple(search_text(entry.snapshot, entry.home) for entry in self.entries)

    @cached_property
    def _by_percent(self) -> tuple[int, ...]:
        def key(i: int) -> tuple[bool, int, int, str, str]:
            entry = self.entries[i]
            shot, percent = entry.snapshot, entry.gauge.percent
            last = -(shot.last_time or 0)
            return (percent is None, -(percent or 0), last, entry.home, shot.session_id)

        return tuple(sorted(range(len(self.entries)), key=key))

    @cached_property
    def _by_headroom(self) -> tuple[int, ...]:
        def key(i: int) -> tuple[bool, int, int, str, str]:
            entry = self.entries[i]
            shot, headroom = entry.snapshot, entry.gauge.headroom
            last = -(shot.last_time or 0)
            return (headroom is None, headroom or 0, last, entry.home, shot.session_id)

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
                    home=entries[i].home,
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
