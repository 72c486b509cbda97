"""The per-home counters of ``/metrics`` (:mod:`dshweb.api.tallies`) follow the views of a
home: only a session whose view is new is counted again, and a counter never goes down
(a session gone, a home unreadable for a moment, a session whose figures drop)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from unittest.mock import patch

import pytest

from dshweb.api import tallies
from dshweb.api.tallies import FAILURES, HomeTally, Tallies, session_counts
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.live.hub import HomeView, SessionView
from tests.support.snapshots import fixture_snapshot, session_snapshot

BOOK = RateBook()


def view_of(shot: SessionSnapshot, version: int = 1) -> SessionView:
    return SessionView(shot, context_gauge(shot), version)


def home_view(*sessions: SessionView, version: int = 1, error: str | None = None) -> HomeView:
    return HomeView(
        Path("/home"), {s.snapshot.session_id: s for s in sessions}, error, version=version
    )


@pytest.fixture(scope="module")
def shots() -> dict[str, SessionSnapshot]:
    return {name: fixture_snapshot(name) for name in ("auto-compact", "fold-failures")}


def added(*counts: dict[tuple[str, ...], float]) -> dict[tuple[str, ...], float]:
    total: dict[tuple[str, ...], float] = {}
    for one in counts:
        for key, value in one.items():
            total[key] = total.get(key, 0) + value
    return total


def test_a_home_s_counts_are_its_sessions_and_follow_only_the_change(
    shots: dict[str, SessionSnapshot],
) -> None:
    a, b = view_of(shots["auto-compact"]), view_of(shots["fold-failures"])
    tally = HomeTally(BOOK)
    tally.follow(home_view(a, b), recent_since=0)
    expected = added(session_counts(a, BOOK), session_counts(b, BOOK))
    assert tally.sums == expected and tally.sums[FAILURES] == 1
    assert expected[("tokens", "deepseek-flash", "cache_read")] > 0
    # A new view in which one session changed counts that one again, not the other.
    grown = view_of(shots["fold-failures"], version=2)
    with patch.object(tallies, "session_counts", wraps=session_counts) as counted:
        tally.follow(home_view(a, grown, version=2), recent_since=0)
        tally.follow(home_view(a, grown, version=2), recent_since=0)  # another, unchanged
    assert [call.args[0] for call in counted.call_args_list] == [grown]
    assert tally.sums == expected  # the same figures: nothing added


def test_a_counter_never_goes_down(shots: dict[str, SessionSnapshot]) -> None:
    whole = shots["fold-failures"]
    early = fixture_snapshot("fold-failures", at_seq=whole.last_seq // 2)
    a = view_of(shots["auto-compact"])
    tally = HomeTally(BOOK)
    tally.follow(home_view(a, view_of(whole)), recent_since=0)
    counted = dict(tally.sums)
    # Its figures drop (a log started over): the session keeps counting at its highest.
    assert session_counts(view_of(early), BOOK) != session_counts(view_of(whole), BOOK)
    tally.follow(home_view(a, view_of(early), version=2), recent_since=0)
    assert tally.sums == counted
    # Gone, then the home unreadable for a moment, then back: counted once, still.
    tally.follow(home_view(a, version=3), recent_since=0)
    assert tally.sums == counted
    tally.follow(home_view(version=4, error="the home cannot be read"), recent_since=0)
    assert tally.sums == counted
    tally.follow(home_view(view_of(shots["auto-compact"], 5), version=5), recent_since=0)
    assert tally.sums == counted
    # A reader error is a gauge: it comes and goes with the session.
    broken = view_of(replace(whole, errors=("corrupt frame",)), version=6)
    tally.follow(home_view(a, broken, version=6), recent_since=0)
    assert tally.errors == 1 and tally.sums == counted
    tally.follow(home_view(a, version=7), recent_since=0)
    assert tally.errors == 0


def test_series_of_their_own_for_the_live_and_the_newest_recent() -> None:
    live = [view_of(session_snapshot(f"live-{n}", last_time=10, live=True)) for n in range(3)]
    recent = [view_of(session_snapshot(f"recent-{n}", last_time=1_000 + n)) for n in range(9)]
    old = view_of(session_snapshot("old", last_time=500))
    tally = HomeTally(BOOK)
    tally.follow(home_view(*live, *recent, old), recent_since=1_000)
    shown = [s.snapshot.session_id for s in tally.shown_sessions(1_000, most_recent=4)]
    assert shown == ["live-0", "live-1", "live-2", "recent-8", "recent-7", "recent-6", "recent-5"]
    # Later, with the same view: the older recent ones age out, the live stay.
    later = [s.snapshot.session_id for s in tally.shown_sessions(1_007, most_recent=4)]
    assert later == ["live-0", "live-1", "live-2", "recent-8", "recent-7"]


def test_a_home_no_longer_shown_or_another_rate_book_starts_afresh(
    shots: dict[str, SessionSnapshot],
) -> None:
    a = view_of(shots["auto-compact"])
    kept = Tallies()
    ((_, first),) = kept.follow({"one": home_view(a)}, BOOK, 0)
    kept.follow({"two": home_view(a)}, BOOK, 0)
    assert list(kept.homes) == ["two"]
    priced = RateBook(aliases=(("deepseek-flash", "deepseek-v4-flash"),))
    ((_, again),) = kept.follow({"two": home_view(a)}, priced, 0)
    assert again is not kept.homes.get("one") and again.book is priced and first.book is BOOK
