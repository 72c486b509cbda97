"""The sessions list's query: read leniently from the address, then matched per session.

The rule exists only on the server (the page and its socket ask it); these tables are
its spec.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import parse_qsl

import pytest

from dshweb.core.fold.gauge import Band, ContextGauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.pages import SessionList
from dshweb.core.listing.query import (
    MAX_PER_PAGE,
    MAX_QUERY,
    PER_PAGE,
    ListQuery,
    SessionState,
    SortKey,
    list_query,
    search_text,
)
from dshweb.core.listing.tree import SessionEntry
from tests.support.snapshots import session_snapshot

BASE = session_snapshot(
    "sess-001",
    cwd="/home/dev/projects/Shop-API",
    title="Fix the Checkout bug",
    model="deepseek-flash",
)
CJK = replace(BASE, session_id="cjk-001", title="你好！请简单地打个招呼。🙂", cwd="/p/数据-工具-😀")
BARE = replace(BASE, session_id="Bare-ID", title=None, cwd=None, model=None)
LIVE = replace(BASE, session_id="live-1", live=True)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, ListQuery()),
        ({"q": "", "state": "", "band": "", "sort": "", "page": "", "per_page": ""}, ListQuery()),
        ({"q": "  shop api ", "state": "live"}, ListQuery("shop api", SessionState.LIVE)),
        ({"q": "x", "state": "idle"}, ListQuery("x", SessionState.IDLE)),
        ({"q": "x", "state": "all"}, ListQuery("x")),
        ({"q": "x", "state": "LIVE"}, ListQuery("x")),  # unknown: show everything
        ({"state": "bogus", "band": "nope", "sort": "size"}, ListQuery()),
        ({"band": "tight", "sort": "headroom"}, ListQuery(band=Band.TIGHT, sort=SortKey.HEADROOM)),
        (
            {"band": "unknown", "sort": "percent"},
            ListQuery(band=Band.UNKNOWN, sort=SortKey.PERCENT),
        ),
        ({"page": "3", "per_page": "20"}, ListQuery(page=3, per_page=20)),
        ({"page": " 3 "}, ListQuery(page=3)),
        ({"page": "0", "per_page": "0"}, ListQuery()),
        ({"page": "-2", "per_page": "-1"}, ListQuery()),
        ({"page": "2.5", "per_page": "1e3"}, ListQuery()),
        ({"page": "٣"}, ListQuery()),  # a digit, but not an ASCII one
        ({"page": "9" * 5000}, ListQuery()),  # past int()'s digit limit: no error
        ({"page": "99999999"}, ListQuery(page=1_000_000)),
        ({"per_page": "5000"}, ListQuery(per_page=MAX_PER_PAGE)),
        ({"q": "a" * 10_000}, ListQuery(q="a" * MAX_QUERY)),
    ],
)
def test_list_query_reads_the_address_leniently(
    params: dict[str, str], expected: ListQuery
) -> None:
    assert list_query(params) == expected


@pytest.mark.parametrize(
    ("query", "text"),
    [
        (ListQuery(), ""),
        (ListQuery(page=1, per_page=PER_PAGE), ""),
        (ListQuery("a b&c", SessionState.LIVE), "q=a+b%26c&state=live"),
        (
            ListQuery("x", SessionState.IDLE, Band.TIGHT, SortKey.PERCENT, 4, 10),
            "q=x&state=idle&band=tight&sort=percent&page=4&per_page=10",
        ),
    ],
)
def test_query_string_leaves_out_the_defaults(query: ListQuery, text: str) -> None:
    assert query.query_string() == text
    assert list_query(dict(parse_qsl(text))) == query  # and it reads back the same


@pytest.mark.parametrize(
    ("query", "terms", "filtering"),
    [
        (ListQuery(), (), False),
        (ListQuery("   "), (), False),
        (ListQuery(sort=SortKey.PERCENT, page=3), (), False),
        (ListQuery("Shop  API\tFix"), ("shop", "api", "fix"), True),
        (ListQuery("", SessionState.IDLE), (), True),
        (ListQuery(band=Band.AMPLE), (), True),
    ],
)
def test_terms_and_filtering(query: ListQuery, terms: tuple[str, ...], filtering: bool) -> None:
    assert query.terms == terms
    assert query.filtering is filtering


@pytest.mark.parametrize(
    ("snapshot", "text"),
    [
        (BASE, "fix the checkout bug sess-001 /home/dev/projects/shop-api deepseek-flash"),
        (BARE, "bare-id"),
        (CJK, "你好！请简单地打个招呼。🙂 cjk-001 /p/数据-工具-😀 deepseek-flash"),
    ],
    ids=["all-fields", "id-only", "cjk"],
)
def test_search_text(snapshot: SessionSnapshot, text: str) -> None:
    assert search_text(snapshot) == text


@pytest.mark.parametrize(
    ("snapshot", "query", "state", "matches"),
    [
        (BASE, "", "all", True),
        (BASE, "checkout", "all", True),  # title, any case
        (BASE, "CHECKOUT", "all", True),
        (BASE, "sess-0", "all", True),  # id
        (BASE, "shop-api", "all", True),  # folder
        (BASE, "flash", "all", True),  # model
        (BASE, "checkout flash", "all", True),  # every term, any field
        (BASE, "checkout nothing", "all", False),
        (BASE, "bug sess", "all", True),
        (BASE, "bug sess-002", "all", False),
        (BASE, "fix the", "all", True),
        (BARE, "bare", "all", True),
        (BARE, "none", "all", False),  # a missing field is not the text "None"
        (CJK, "招呼", "all", True),
        (CJK, "😀", "all", True),
        (CJK, "数据 cjk", "all", True),
        (BASE, "", "live", False),
        (BASE, "", "idle", True),
        (LIVE, "", "live", True),
        (LIVE, "", "idle", False),
        (LIVE, "checkout", "live", True),
        (LIVE, "nothing", "live", False),
        (LIVE, "", "bogus", True),
    ],
)
def test_session_matches(snapshot: SessionSnapshot, query: str, state: str, matches: bool) -> None:
    assert shown(snapshot, list_query({"q": query, "state": state})) is matches


@pytest.mark.parametrize(
    ("band", "chosen", "matches"),
    [
        (Band.TIGHT, None, True),
        (Band.TIGHT, Band.TIGHT, True),
        (Band.TIGHT, Band.CRITICAL, False),
        (Band.UNKNOWN, Band.UNKNOWN, True),
        (Band.UNKNOWN, Band.AMPLE, False),
    ],
)
def test_session_matches_the_band(band: Band, chosen: Band | None, matches: bool) -> None:
    assert shown(BASE, ListQuery(band=chosen), band=band) is matches
    assert shown(BASE, ListQuery("checkout", band=chosen), band=band) is matches
    assert shown(BASE, ListQuery("nothing", band=chosen), band=band) is False


def shown(snapshot: SessionSnapshot, query: ListQuery, *, band: Band = Band.UNKNOWN) -> bool:
    """Whether the sessions list shows ``snapshot`` (whose band is ``band``) for ``query``."""
    gauge = ContextGauge(None, None, None, None, None, band)
    page = SessionList((SessionEntry(snapshot, gauge, depth=0, orphan=False),)).page(query)
    assert page.matched == len(page.rows)
    return page.matched == 1
