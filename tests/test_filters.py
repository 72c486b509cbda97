"""The sessions list's filter: the query string read leniently, then matched per session.

The browser applies the same rule (static/dshweb/live.js); these tables are its spec.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from dshweb.core.filters import (
    SessionFilter,
    SessionState,
    hidden_sessions,
    search_text,
    session_filter,
    session_matches,
)
from dshweb.core.session import SessionSnapshot

BASE = SessionSnapshot(
    session_id="sess-001",
    path="sessions/--p--/sess-001/session.v4.jsonl.zstd",
    format_version=4,
    cwd="/home/dev/projects/Shop-API",
    created_at=0,
    parent_session=None,
    origin=None,
    live=False,
    title="Fix the Checkout bug",
    model="deepseek-flash",
    last_seq=0,
    events=1,
    first_time=0,
    last_time=1,
    turns=0,
    compactions=0,
    failed_compactions=0,
    prunes=0,
    token_usage={},
    context_pressure={},
    context_breakdown={},
    point=None,
    measured_tokens=0,
    largest_nodes=(),
    errors=(),
)
CJK = replace(BASE, session_id="cjk-001", title="你好！请简单地打个招呼。🙂", cwd="/p/数据-工具-😀")
BARE = replace(BASE, session_id="Bare-ID", title=None, cwd=None, model=None)
LIVE = replace(BASE, session_id="live-1", live=True)


@pytest.mark.parametrize(
    ("query", "state", "expected"),
    [
        (None, None, SessionFilter("", SessionState.ALL)),
        ("", "", SessionFilter("", SessionState.ALL)),
        ("  shop api ", "live", SessionFilter("shop api", SessionState.LIVE)),
        ("x", "idle", SessionFilter("x", SessionState.IDLE)),
        ("x", "all", SessionFilter("x", SessionState.ALL)),
        ("x", "LIVE", SessionFilter("x", SessionState.ALL)),  # unknown: show everything
        ("x", "bogus", SessionFilter("x", SessionState.ALL)),
    ],
)
def test_session_filter_reads_the_query_string(
    query: str | None, state: str | None, expected: SessionFilter
) -> None:
    assert session_filter(query=query, state=state) == expected


@pytest.mark.parametrize(
    ("chosen", "terms", "active"),
    [
        (SessionFilter(), (), False),
        (SessionFilter("   "), (), False),
        (SessionFilter("Shop  API\tFix"), ("shop", "api", "fix"), True),
        (SessionFilter("", SessionState.IDLE), (), True),
    ],
)
def test_terms_and_active(chosen: SessionFilter, terms: tuple[str, ...], active: bool) -> None:
    assert chosen.terms == terms
    assert chosen.active is active


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
    assert session_matches(snapshot, session_filter(query=query, state=state)) is matches


@pytest.mark.parametrize(
    ("query", "state", "hidden"),
    [
        ("", "all", set()),
        ("", "live", {"sess-001", "cjk-001", "Bare-ID"}),
        ("", "idle", {"live-1"}),
        ("checkout", "all", {"cjk-001", "Bare-ID"}),
        ("no-such-thing", "all", {"sess-001", "cjk-001", "Bare-ID", "live-1"}),
    ],
)
def test_hidden_sessions(query: str, state: str, hidden: set[str]) -> None:
    shots = [BASE, CJK, BARE, LIVE]
    assert hidden_sessions(shots, session_filter(query=query, state=state)) == hidden
