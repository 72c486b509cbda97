"""The sessions list: its order, and one page of it for a query.

Pure, no Django. The list's natural order is each home's tree (:mod:`.tree`: newest
activity first, each sub-agent under its parent), several homes interleaved by activity
(each session's place in its own home's tree kept). :class:`SessionList` filters, sorts
and pages it for a :class:`~.query.ListQuery` (:meth:`SessionList.page`), and counts
every session by band, by live/idle and by home. A :class:`SessionList` is built once per
view of the homes and keeps what every query shares (the counts, search texts, flat
orders): a filtered or re-sorted page costs a pass over the entries, no sort, and the
unfiltered list in its own order reads only the page's rows.

- Activity order keeps the tree under a filter: a session that matches stays at its
  place and depth even when its parent does not match (filtering never moves a row).
- Percent, headroom and fold orders are flat (every row at depth 0): fullest first, least
  room before the compaction point first, or fewest steps to the next automatic fold
  first (a session not running comes with those without a forecast); sessions without
  the figure come last, and ties go newest activity first, then by home and id.
- The page number is clamped to the pages there are; an empty list has one page.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import chain, islice

from dshweb.core.fold.cost import REGISTRY_RATES, RateBook
from dshweb.core.fold.gauge import Band
from dshweb.core.listing.homes import DEFAULT_HOME_NAME
from dshweb.core.listing.query import ListQuery, SortKey, matches, search_text
from dshweb.core.listing.tree import BANDS, HomeTree, SessionEntry, Tally


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
    """The sessions of one or more homes in tree order, ready to be paged: ``entries`` (in
    :func:`~.tree.session_tree` order) and the ``homes`` listed, or each home's
    :class:`~.tree.HomeTree` (``trees``), whose counts it sums and whose first pages it
    reads without laying the whole list out.

    Immutable once built; what it derives is computed on first use and kept (a race
    computes it twice, to the same value).
    """

    def __init__(
        self,
        entries: Sequence[SessionEntry] = (),
        homes: Sequence[str] = (DEFAULT_HOME_NAME,),
        *,
        trees: Sequence[HomeTree] = (),
    ) -> None:
        self._trees = tuple(trees)
        self._by_cost: dict[RateBook, tuple[int, ...]] = {}
        if trees:
            homes = [tree.home for tree in trees]
        else:
            self.__dict__["entries"] = tuple(entries)
        self.homes = tuple(sorted(homes))

    @cached_property
    def entries(self) -> tuple[SessionEntry, ...]:
        """Every session in list order."""
        if len(self._trees) == 1:
            return self._trees[0].entries
        return tuple(self._in_order())

    def _in_order(self) -> Iterator[SessionEntry]:
        """The entries in list order, laid out as they are read."""
        if "entries" in self.__dict__:
            return iter(self.entries)
        if len(self._trees) == 1:
            return self._trees[0].in_order()
        merged = heapq.merge(*(tree.keyed_groups() for tree in self._trees))
        return chain.from_iterable(group for *_, group in merged)

    @cached_property
    def counts(self) -> ListCounts:
        if self._trees:
            return _counts({tree.home: tree.tally for tree in self._trees})
        by_home: dict[str, list[SessionEntry]] = {home: [] for home in self.homes}
        for entry in self.entries:
            by_home.setdefault(entry.home, []).append(entry)
        return _counts({home: Tally().plus(entries) for home, entries in by_home.items()})

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

    @cached_property
    def _by_next_pass(self) -> tuple[int, ...]:
        def key(i: int) -> tuple[bool, float, int, str, str]:
            shot = self.entries[i].snapshot
            steps = shot.pace_forecast.steps
            last = -(shot.last_time or 0)
            later = steps is None or not shot.live
            return (
                later,
                0.0 if later else steps or 0.0,
                last,
                self.entries[i].home,
                shot.session_id,
            )

        return tuple(sorted(range(len(self.entries)), key=key))

    def _dearest(self, book: RateBook) -> tuple[int, ...]:
        """Dearest first by ``book`` (kept per book: one per server)."""
        found = self._by_cost.get(book)
        if found is not None:
            return found
        totals = [book.total(entry.snapshot.cost)[0] for entry in self.entries]

        def key(i: int) -> tuple[bool, float, int, str, str]:
            entry, total = self.entries[i], totals[i]
            last = -(entry.snapshot.last_time or 0)
            return (total is None, -(total or 0.0), last, entry.home, entry.snapshot.session_id)

        found = self._by_cost[book] = tuple(sorted(range(len(self.entries)), key=key))
        return found

    def _order(self, sort: SortKey, book: RateBook) -> Sequence[int]:
        if sort is SortKey.COST:
            return self._dearest(book)
        if sort is SortKey.PERCENT:
            return self._by_percent
        if sort is SortKey.HEADROOM:
            return self._by_headroom
        if sort is SortKey.NEXT_PASS:
            return self._by_next_pass
        return range(len(self.entries))

    def page(self, query: ListQuery, book: RateBook = REGISTRY_RATES) -> ListPage:
        """The page ``query`` asks for (``book``: the rates the cost sort goes by)."""
        if not query.filtering and query.sort is SortKey.ACTIVITY:
            # Every session, in list order: only the page's rows are read.
            matched = self.counts.total
            page, count, offset = _paged(matched, query)
            rows = tuple(islice(self._in_order(), offset, offset + query.per_page))
            return ListPage(query.on_page(page), rows, matched, count, offset, self.counts)
        entries = self.entries
        order = self._order(query.sort, book)
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
                    band=entries[i].gauge.band,
                    text=texts[i],
                    snapshot=entries[i].snapshot,
                )
            ]
        matched = len(order)
        page, count, offset = _paged(matched, query)
        picked = [entries[i] for i in order[offset : offset + query.per_page]]
        if query.sort is not SortKey.ACTIVITY:
            picked = [replace(row, depth=0) if row.depth else row for row in picked]
        return ListPage(query.on_page(page), tuple(picked), matched, count, offset, self.counts)


def _paged(matched: int, query: ListQuery) -> tuple[int, int, int]:
    """The page shown, the page count and the rows before the page, for ``matched`` rows:
    the page asked for, clamped to the pages there are (an empty list has one)."""
    pages = max(1, math.ceil(matched / query.per_page))
    page = min(query.page, pages)
    return page, pages, (page - 1) * query.per_page


def _counts(tallies: dict[str, Tally]) -> ListCounts:
    """The list's counts from each home's tally."""
    bands = tuple(map(sum, zip(*(t.bands for t in tallies.values()), strict=True)))
    return ListCounts(
        sum(t.total for t in tallies.values()),
        sum(t.live for t in tallies.values()),
        tuple(zip(BANDS, bands or (0,) * len(BANDS), strict=True)),
        tuple(sorted((home, t.total) for home, t in tallies.items())),
    )
