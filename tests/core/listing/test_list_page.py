"""One page of the sessions list for a query: order, filter, paging and counts (pure)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from dshweb.core.fold.gauge import Band, ContextGauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.pages import ListCounts, SessionList
from dshweb.core.listing.query import ListQuery, SessionState, SortKey
from dshweb.core.listing.tree import BANDS, HomeTree, SessionEntry, session_tree
from tests.support.snapshots import session_snapshot


def gauge(percent: int | None, headroom: int | None, band: Band) -> ContextGauge:
    return ContextGauge(
        used=None if percent is None else percent * 10,
        window=None if percent is None else 1000,
        percent=percent,
        threshold=None if headroom is None else 500,
        headroom=headroom,
        band=band,
    )


# id: (last activity, parent, title, live, percent, headroom, band)
HOME: dict[str, tuple[int, str | None, str, bool, int | None, int | None, Band]] = {
    "alpha": (100, None, "fix the checkout", False, 40, 100, Band.MODERATE),
    "alpha-sub": (400, "alpha", "search the docs", True, 90, -20, Band.CRITICAL),
    "alpha-sub-sub": (50, "alpha-sub", "grep the logs", False, 10, 20, Band.AMPLE),
    "beta": (300, None, "checkout tests", False, 90, 30, Band.TIGHT),
    "gamma": (200, None, "write docs", True, None, None, Band.UNKNOWN),
    "delta": (250, None, "release", False, 5, None, Band.UNKNOWN),
    "lost": (150, "gone", "orphan docs", False, 40, 100, Band.MODERATE),
}
TREE = ["alpha", "alpha-sub", "alpha-sub-sub", "beta", "delta", "gamma", "lost"]
"""The tree order: alpha's subtree is the newest (400), then 300, 250, 200, 150."""


Home = dict[str, tuple[int, str | None, str, bool, int | None, int | None, Band]]


def entries(home: Home = HOME, name: str = "local") -> list[SessionEntry]:
    return session_tree(*_shots(home), name)


def home_tree(home: Home, name: str) -> HomeTree:
    return HomeTree.build(*_shots(home), name)


def _shots(home: Home) -> tuple[list[SessionSnapshot], Callable[[SessionSnapshot], ContextGauge]]:
    shots = [
        session_snapshot(sid, last, parent=parent, title=title, live=live)
        for sid, (last, parent, title, live, *_) in home.items()
    ]
    readings = {sid: gauge(*figures[4:]) for sid, figures in home.items()}
    return shots, lambda s: readings[s.session_id]


def ids(rows: tuple[SessionEntry, ...]) -> list[str]:
    return [row.snapshot.session_id for row in rows]


def test_activity_order_is_the_tree() -> None:
    page = SessionList(entries()).page(ListQuery())
    assert ids(page.rows) == TREE
    assert [row.depth for row in page.rows] == [0, 1, 2, 0, 0, 0, 0]
    assert (page.matched, page.total, page.page, page.pages) == (7, 7, 1, 1)


@pytest.mark.parametrize(
    ("query", "shown", "depths"),
    [
        # A parent that does not match hides none of its matching sub-agents, which stay
        # at their place and depth.
        (ListQuery("docs"), ["alpha-sub", "gamma", "lost"], [1, 0, 0]),
        (ListQuery("logs"), ["alpha-sub-sub"], [2]),
        (ListQuery("checkout"), ["alpha", "beta"], [0, 0]),
        (ListQuery("", SessionState.LIVE), ["alpha-sub", "gamma"], [1, 0]),
        (ListQuery("docs", SessionState.IDLE), ["lost"], [0]),
        (ListQuery(band=Band.UNKNOWN), ["delta", "gamma"], [0, 0]),
        (ListQuery(band=Band.MODERATE), ["alpha", "lost"], [0, 0]),
        (ListQuery("nothing"), [], []),
    ],
)
def test_filter_keeps_the_tree(query: ListQuery, shown: list[str], depths: list[int]) -> None:
    page = SessionList(entries()).page(query)
    assert ids(page.rows) == shown
    assert [row.depth for row in page.rows] == depths
    assert page.matched == len(shown)
    assert page.total == len(HOME)


def test_orphans_stay_marked() -> None:
    page = SessionList(entries()).page(ListQuery("orphan"))
    ((row,),) = (page.rows,)
    assert row.orphan is True


@pytest.mark.parametrize(
    ("sort", "order"),
    [
        # Fullest first; a tie (90 %, 40 %) newest first; no percent last.
        (
            SortKey.PERCENT,
            ["alpha-sub", "beta", "lost", "alpha", "alpha-sub-sub", "delta", "gamma"],
        ),
        # Least room first (past the point first of all); no headroom last, newest first.
        (
            SortKey.HEADROOM,
            ["alpha-sub", "alpha-sub-sub", "beta", "lost", "alpha", "delta", "gamma"],
        ),
    ],
)
def test_flat_sorts(sort: SortKey, order: list[str]) -> None:
    page = SessionList(entries()).page(ListQuery(sort=sort))
    assert ids(page.rows) == order
    assert {row.depth for row in page.rows} == {0}  # flat: no row indented
    assert [row.orphan for row in page.rows] == [sid == "lost" for sid in order]


def test_flat_sort_filters_too() -> None:
    page = SessionList(entries()).page(ListQuery("docs", sort=SortKey.PERCENT))
    assert ids(page.rows) == ["alpha-sub", "lost", "gamma"]
    assert [row.depth for row in page.rows] == [0, 0, 0]


@pytest.mark.parametrize(
    ("page", "per_page", "rows", "clamped", "pages", "first", "last"),
    [
        (1, 3, ["alpha", "alpha-sub", "alpha-sub-sub"], 1, 3, 1, 3),
        (2, 3, ["beta", "delta", "gamma"], 2, 3, 4, 6),
        (3, 3, ["lost"], 3, 3, 7, 7),
        (4, 3, ["lost"], 3, 3, 7, 7),  # past the end: the last page
        (1_000_000, 3, ["lost"], 3, 3, 7, 7),
        (1, 7, TREE, 1, 1, 1, 7),
        (2, 7, TREE, 1, 1, 1, 7),
        (7, 1, ["lost"], 7, 7, 7, 7),
    ],
)
def test_paging_clamps(
    page: int, per_page: int, rows: list[str], clamped: int, pages: int, first: int, last: int
) -> None:
    result = SessionList(entries()).page(ListQuery(page=page, per_page=per_page))
    assert ids(result.rows) == rows
    assert (result.page, result.query.page, result.pages) == (clamped, clamped, pages)
    assert (result.first, result.last) == (first, last)
    assert result.previous_page == (clamped - 1 if clamped > 1 else None)
    assert result.next_page == (clamped + 1 if clamped < pages else None)


def test_an_empty_list_is_one_empty_page() -> None:
    for query in (ListQuery(), ListQuery(page=5), ListQuery("x", band=Band.TIGHT)):
        page = SessionList([]).page(query)
        assert (page.rows, page.matched, page.page, page.pages) == ((), 0, 1, 1)
        assert (page.first, page.last, page.previous_page, page.next_page) == (0, 0, None, None)
        assert page.counts == ListCounts(homes=(("local", 0),))


def test_counts_are_the_whole_homes_whatever_the_query() -> None:
    expected = ListCounts(
        total=7,
        live=2,
        bands=(
            (Band.AMPLE, 1),
            (Band.MODERATE, 2),
            (Band.TIGHT, 1),
            (Band.CRITICAL, 1),
            (Band.UNKNOWN, 2),
        ),
        homes=(("local", 7),),
    )
    for query in (ListQuery(), ListQuery("docs", SessionState.LIVE, Band.CRITICAL, page=9)):
        page = SessionList(entries()).page(query)
        assert page.counts == expected
        assert page.counts.idle == 5
    assert [band for band, _ in expected.bands] == list(BANDS)


@pytest.mark.parametrize(
    ("page", "pages", "numbers"),
    [
        (1, 1, (1,)),
        (1, 5, (1, 2, 3, 4, 5)),
        (1, 10, (1, 2, 3, None, 10)),
        (5, 10, (1, 2, 3, 4, 5, 6, 7, None, 10)),
        (6, 12, (1, None, 4, 5, 6, 7, 8, None, 12)),
        (12, 12, (1, None, 10, 11, 12)),
        (4, 100, (1, 2, 3, 4, 5, 6, None, 100)),
    ],
)
def test_page_numbers(page: int, pages: int, numbers: tuple[int | None, ...]) -> None:
    home = [
        SessionEntry(
            session_snapshot(f"s{i:03}", 1000 - i), gauge(None, None, Band.UNKNOWN), 0, False
        )
        for i in range(pages)
    ]
    result = SessionList(home).page(ListQuery(page=page, per_page=1))
    assert result.page_numbers() == numbers


def test_layout_changes_only_with_what_the_page_holds() -> None:
    home = entries()
    query = ListQuery(per_page=3)
    before = SessionList(home).page(query)
    # New figures for a row on the page: the same layout (only that row is sent again).
    refigured = [
        replace(e, gauge=gauge(95, -50, Band.CRITICAL)) if e.snapshot.session_id == "alpha" else e
        for e in home
    ]
    assert SessionList(refigured).page(query).layout == before.layout
    # A new session past this page: the page's layout is the same, its counts are not.
    grown = [*home, SessionEntry(session_snapshot("old", 1), gauge(1, 900, Band.AMPLE), 0, False)]
    after = SessionList(grown).page(query)
    assert after.layout == before.layout
    assert after.counts != before.counts and after.matched == before.matched + 1
    # The order on the page changes: another layout.
    newest = [
        SessionEntry(session_snapshot("new", 999), gauge(1, 900, Band.AMPLE), 0, False),
        *home,
    ]
    assert SessionList(newest).page(query).layout != before.layout
    # The pages grow: another layout (the pager changes).
    more = grown + [
        SessionEntry(session_snapshot(f"x{i}", 0), gauge(1, 9, Band.AMPLE), 0, False)
        for i in range(2)
    ]
    assert SessionList(more).page(query).pages == 4 != before.pages
    assert SessionList(more).page(query).layout != before.layout


def test_a_session_list_pages_the_same_entries_again() -> None:
    home = SessionList(entries())
    for query in (
        ListQuery(),
        ListQuery("docs"),
        ListQuery(sort=SortKey.HEADROOM, per_page=2, page=2),
        ListQuery(sort=SortKey.PERCENT, band=Band.MODERATE),
    ):
        assert home.page(query) == SessionList(entries()).page(query)
        assert home.page(query) == home.page(query)


def test_a_big_home_gives_one_page() -> None:
    home = [
        SessionEntry(
            session_snapshot(f"s{i:05}", i, title=f"task {i}"),
            gauge(i % 101, 500 - i % 7, Band.AMPLE),
            0,
            False,
        )
        for i in reversed(range(5000))  # the tree's order: newest first
    ]
    sessions = SessionList(home)
    page = sessions.page(ListQuery(page=3))
    assert ids(page.rows) == [f"s{i:05}" for i in range(4899, 4849, -1)]
    assert (page.pages, page.first, page.last) == (100, 101, 150)
    by_percent = sessions.page(ListQuery(sort=SortKey.PERCENT, q="task 1"))
    assert [row.gauge.percent for row in by_percent.rows] == sorted(
        (row.gauge.percent or 0 for row in by_percent.rows), reverse=True
    )
    assert len(by_percent.rows) == 50


# --- several homes -----------------------------------------------------------------------

# A second home whose sessions interleave with HOME's by activity; "beta" is in both.
OTHER: dict[str, tuple[int, str | None, str, bool, int | None, int | None, Band]] = {
    "beta": (350, None, "other beta", False, 95, -5, Band.CRITICAL),
    "zeta": (500, None, "zeta work", True, 20, 300, Band.AMPLE),
    "zeta-sub": (120, "zeta", "zeta helper", False, 30, 200, Band.AMPLE),
    "omega": (10, None, "old", False, None, None, Band.UNKNOWN),
}


def two_homes() -> SessionList:
    return SessionList(trees=[home_tree(HOME, "local"), home_tree(OTHER, "laptop")])


def keys(rows: tuple[SessionEntry, ...]) -> list[tuple[str, str]]:
    return [row.key for row in rows]


def test_homes_interleave_by_activity_each_subtree_whole() -> None:
    page = two_homes().page(ListQuery())
    assert keys(page.rows) == [
        ("laptop", "zeta"),  # 500, with its sub-agent under it though that is older
        ("laptop", "zeta-sub"),
        ("local", "alpha"),  # its subtree's newest: 400
        ("local", "alpha-sub"),
        ("local", "alpha-sub-sub"),
        ("laptop", "beta"),  # 350: the same id as local's beta, another session
        ("local", "beta"),
        ("local", "delta"),
        ("local", "gamma"),
        ("local", "lost"),
        ("laptop", "omega"),
    ]
    assert [row.depth for row in page.rows] == [0, 1, 0, 1, 2, 0, 0, 0, 0, 0, 0]
    assert page.counts.homes == (("laptop", 4), ("local", 7))
    assert (page.counts.total, page.counts.live) == (11, 3)


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        (ListQuery(home="laptop"), [("laptop", s) for s in ("zeta", "zeta-sub", "beta", "omega")]),
        (ListQuery(home="nowhere"), []),
        (ListQuery("laptop beta"), [("laptop", "beta")]),  # the home's name is searched
        (ListQuery(home="local", band=Band.TIGHT), [("local", "beta")]),
        (
            ListQuery(sort=SortKey.PERCENT, per_page=3),
            [("laptop", "beta"), ("local", "alpha-sub"), ("local", "beta")],
        ),
    ],
)
def test_a_query_picks_sessions_by_home(query: ListQuery, shown: list[tuple[str, str]]) -> None:
    page = two_homes().page(query)
    assert keys(page.rows) == shown
    assert page.counts.homes == (("laptop", 4), ("local", 7))  # whatever the query


def test_one_homes_tree_is_its_own_order() -> None:
    listing = SessionList(trees=[home_tree(HOME, "local")])
    assert listing.entries == tuple(entries())
    assert listing.counts == SessionList(entries()).counts


QUERIES = [
    ListQuery(),
    ListQuery(per_page=3),
    ListQuery(page=2, per_page=4),
    ListQuery(page=9, per_page=5),  # past the end: the last page
    ListQuery("docs"),
    ListQuery(home="laptop"),
    ListQuery(state=SessionState.LIVE, per_page=2),
    ListQuery(sort=SortKey.PERCENT),
    ListQuery(sort=SortKey.HEADROOM, page=2, per_page=3),
]


@pytest.mark.parametrize("query", QUERIES)
def test_pages_read_from_the_trees_equal_pages_of_the_whole_list(query: ListQuery) -> None:
    """The unfiltered list in its own order reads only its page from the trees; every
    query gives what the same list laid out whole gives."""
    trees = two_homes()
    whole = SessionList(trees.entries, ("local", "laptop"))
    assert trees.page(query) == whole.page(query)


def test_the_fold_sort_puts_the_running_session_closest_to_its_fold_first() -> None:
    from dataclasses import replace

    from dshweb.core.fold.forecast import NO_FORECAST_YET, Forecast, Forecasts

    # id: (forecast steps or None, live); the rest from HOME.
    steps = {
        "alpha": (9, True),
        "alpha-sub": (3, True),
        "alpha-sub-sub": (1, False),  # closest, but not running: with the rest
        "beta": (4, True),
        "gamma": (None, True),
        "delta": (30, True),
        "lost": (4, True),  # ties beta: newest first (beta 300, lost 150)
    }
    shots, gauge_of = _shots(HOME)
    shots = [
        replace(
            shot,
            live=steps[shot.session_id][1],
            forecasts=Forecasts.of(
                Forecast(steps[shot.session_id][0], 1, 40)
                if steps[shot.session_id][0] is not None
                else Forecast(reason="too few steps"),
                NO_FORECAST_YET,
            ),
        )
        for shot in shots
    ]
    page = SessionList(session_tree(shots, gauge_of, "local")).page(
        ListQuery(sort=SortKey.NEXT_PASS)
    )
    # Then the others, newest activity first: alpha-sub-sub (50) after gamma (200).
    assert ids(page.rows) == [
        "alpha-sub",
        "beta",
        "lost",
        "alpha",
        "delta",
        "gamma",
        "alpha-sub-sub",
    ]
    assert {row.depth for row in page.rows} == {0}
    assert ListQuery(sort=SortKey.NEXT_PASS).query_string() == "sort=fold"


def test_the_cost_sort_puts_the_dearest_session_first_and_the_unpriced_last() -> None:
    """By the prices given: ``PRICE_AS`` prices the flash session, the dearest of all."""
    from dshweb.core.fold.cost import RateBook, parse_aliases
    from tests.support.snapshots import fixture_snapshot

    shots = [fixture_snapshot(n) for n in ("prune-heavy", "cost-pro", "cost-switch")]
    listed = SessionList(session_tree(shots, lambda s: gauge(10, 1000, Band.AMPLE), "local"))
    book = RateBook()
    assert [book.total(s.cost)[0] is None for s in shots] == [True, False, False]
    page = listed.page(ListQuery(sort=SortKey.COST), book)
    assert ids(page.rows) == ["cost-pro", "cost-switch", "prune-heavy"]
    assert {row.depth for row in page.rows} == {0}
    aliased = RateBook(aliases=parse_aliases("deepseek-flash=deepseek-v4-flash"))
    page = listed.page(ListQuery(sort=SortKey.COST), aliased)
    assert ids(page.rows) == ["prune-heavy", "cost-pro", "cost-switch"]
    assert ListQuery(sort=SortKey.COST).query_string() == "sort=cost"
