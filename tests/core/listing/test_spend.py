"""What the homes spent by day, ISO week and project, and the burn rate
(dshweb.core.listing.spend): on sessions across midnight, against each request priced
again by the registry at its own time and added up by hand; and the sums kept by the
sessions list's tree as sessions change equal the sums made from nothing."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshweb.core.fold.billing import NO_TIME, Slot, undated
from dshweb.core.fold.cost import Buckets, RateBook, SessionCost
from dshweb.core.fold.gauge import Band, ContextGauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.spend import (
    NOTHING,
    Amount,
    HomeSpend,
    day_amount,
    project_of,
    spend_report,
)
from dshweb.core.listing.tree import HomeTree
from tests.support.snapshots import session_snapshot
from tests.support.spendhome import NOW, SESSIONS, UNPRICED, Request, at, spend_home

UTC_ZONE = ZoneInfo("UTC")
SHANGHAI = ZoneInfo("Asia/Shanghai")
NOW_MS = int(NOW.timestamp() * 1000)


def close(value: float | None) -> object:
    return pytest.approx(value, rel=1e-12, abs=1e-15)


def priced_sum(requests: list[Request]) -> Amount:
    """The requests priced one by one by the registry, added up."""
    total = NOTHING
    for request in requests:
        usd = request.usd
        total += Amount(unrated=True) if usd is None else Amount(usd, priced=True)
    return total


def same(amount: Amount, expected: Amount) -> None:
    assert (amount.priced, amount.unrated) == (expected.priced, expected.unrated)
    assert amount.dollars == close(expected.dollars)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> HomeTree:
    home = spend_home(tmp_path_factory.mktemp("spend") / "home")
    index = HomeIndex(home)
    index.refresh()
    return HomeTree.build(index.snapshots())


def test_days_weeks_projects_and_burn_in_utc_against_each_request_priced(tree: HomeTree) -> None:
    midnight, evening, other = (SESSIONS[name][1] for name in ("midnight", "evening", "other"))
    report = spend_report([tree.spend], RateBook(), UTC_ZONE, NOW_MS)
    assert report.today.day == date(2026, 9, 2) and len(report.days) == 14
    by_day = {d.day: d.amount for d in report.days}
    # The midnight session's two requests fall on two UTC days.
    same(by_day[date(2026, 9, 2)], priced_sum([midnight[1], *evening, other[1]]))
    same(by_day[date(2026, 9, 1)], priced_sum([midnight[0]]))
    same(by_day[date(2026, 8, 28)], priced_sum([other[0]]))
    assert by_day[date(2026, 8, 30)] == NOTHING
    assert by_day[date(2026, 9, 2)].unrated and by_day[date(2026, 9, 2)].usd is not None
    assert not by_day[date(2026, 9, 1)].unrated
    # ISO weeks: 36 began on Monday 31 August; the Friday before is week 35.
    assert [w.iso for w in report.weeks[:2]] == [(2026, 36), (2026, 35)]
    assert report.weeks[0].start == date(2026, 8, 31) and len(report.weeks) == 8
    same(report.weeks[0].amount, priced_sum([*midnight, *evening, other[1]]))
    same(report.weeks[1].amount, priced_sum([other[0]]))
    assert all(w.amount == NOTHING for w in report.weeks[2:])
    # Projects: by DSH's project folder, the dearest first, named by their working folder.
    shop, blog = priced_sum([*midnight, *evening]), priced_sum(other)
    rows = {p.folder: p for p in report.projects}
    assert set(rows) == {"--work-shop--", "--work-blog--"}
    assert (rows["--work-shop--"].cwd, rows["--work-shop--"].sessions) == ("/work/shop", 2)
    assert (rows["--work-blog--"].cwd, rows["--work-blog--"].sessions) == ("/work/blog", 1)
    same(rows["--work-shop--"].amount, shop)
    same(rows["--work-blog--"].amount, blog)
    assert [p.folder for p in report.projects] == sorted(
        rows, key=lambda name: -rows[name].amount.dollars
    )
    same(report.total, shop + blog)
    # Burn: now is 16:40, in the 16:30 quarter hour. The last hour is 15:45 to now
    # (55 minutes): 16:30 and 16:35, not 15:40; the last day is from 16:45 yesterday.
    hour = report.last_hour
    assert (hour.now_ms - hour.since_ms) == 55 * 60_000
    same(hour.amount, priced_sum(evening))
    assert hour.per_hour == close(priced_sum(evening).dollars / (55 / 60))
    day = report.last_day
    assert day.since_ms == int(at("2026-09-01T16:45").timestamp() * 1000)
    same(day.amount, priced_sum([*midnight, *evening, other[1]]))
    assert day.per_hour == close(day.amount.dollars / (23 + 55 / 60))
    assert report.undated == NOTHING


def test_days_and_weeks_in_another_time_zone_split_where_its_midnight_falls(
    tree: HomeTree,
) -> None:
    """In Shanghai (UTC+8) the session across UTC midnight is one morning, and the evening
    one (16:30 UTC) is already the next day: today there is Thursday 3 September."""
    midnight, evening, other = (SESSIONS[name][1] for name in ("midnight", "evening", "other"))
    report = spend_report([tree.spend], RateBook(), SHANGHAI, NOW_MS)
    assert report.zone == "Asia/Shanghai" and report.today.day == date(2026, 9, 3)
    by_day = {d.day: d.amount for d in report.days}
    same(by_day[date(2026, 9, 3)], priced_sum(evening))
    same(by_day[date(2026, 9, 2)], priced_sum([*midnight, other[1]]))
    assert by_day[date(2026, 9, 1)] == NOTHING
    same(by_day[date(2026, 8, 28)], priced_sum([other[0]]))
    same(report.weeks[0].amount, priced_sum([*midnight, *evening, other[1]]))
    same(day_amount([tree.spend], RateBook(), SHANGHAI, date(2026, 9, 2)), by_day[date(2026, 9, 2)])
    # The burn rate reads the clock, not the calendar: the same in every zone.
    assert report.last_hour == spend_report([tree.spend], RateBook(), UTC_ZONE, NOW_MS).last_hour


def test_an_unpriced_model_alone_is_unknown_never_zero(tree: HomeTree) -> None:
    later = NOW_MS + 10 * 60_000  # 16:50: the last hour holds the two evening requests
    report = spend_report([tree.spend], RateBook(), UTC_ZONE, later)
    assert report.last_hour.amount.unrated and report.last_hour.amount.priced
    only = Amount(unrated=True)
    assert (only.usd, only.priced) == (None, False)
    assert (only + NOTHING).usd is None and (only + Amount(1.5, priced=True)).usd == 1.5


def test_several_homes_add_up_and_a_project_in_both_is_one_row(tree: HomeTree) -> None:
    once = spend_report([tree.spend], RateBook(), UTC_ZONE, NOW_MS)
    twice = spend_report([tree.spend, tree.spend], RateBook(), UTC_ZONE, NOW_MS)
    assert twice.today.amount.dollars == close(2 * once.today.amount.dollars)
    assert [(p.folder, p.sessions) for p in twice.projects] == [
        (p.folder, 2 * p.sessions) for p in once.projects
    ]


def test_project_of_reads_the_folder_dsh_files_a_session_under() -> None:
    assert project_of("sessions/--home-me-app--/abc/session.v4.jsonl.zstd") == "--home-me-app--"
    assert project_of("/elsewhere/--x--/abc/session.jsonl") == "--x--"
    assert project_of("session.jsonl") == ""


# -- kept as sessions change ---------------------------------------------------------------

MODELS = ("deepseek-v4-pro", "deepseek-v4-flash", UNPRICED)
DAYS = (NO_TIME, 739_860, 739_861, 739_862)
PROJECTS = ("--a--", "--b--", "--c--")
IDS = [f"s{i}" for i in range(12)]

slots_st = st.tuples(
    st.sampled_from(MODELS),
    st.just("p"),
    st.booleans(),
    st.integers(0, 95),
    st.sampled_from(DAYS),
).map(lambda s: s if s[4] != NO_TIME else (s[0], s[1], False, NO_TIME, NO_TIME))
tokens_st = st.tuples(*(st.integers(0, 5_000) for _ in range(4)))
cost_st = st.builds(
    SessionCost,
    requests=st.dictionaries(slots_st, tokens_st, max_size=6).map(lambda d: tuple(d.items())),
    summaries=st.dictionaries(slots_st, tokens_st, max_size=2).map(lambda d: tuple(d.items())),
)
session_st = st.tuples(
    st.integers(1, 60), st.sampled_from(PROJECTS), st.sampled_from(["/a", "/b", None]), cost_st
)
Figures = tuple[int, str, str | None, SessionCost]


class View:
    def __init__(self, snapshot: SessionSnapshot) -> None:
        self.snapshot = snapshot
        self.gauge = ContextGauge(0, 100, 0, 80, 80, Band.AMPLE)


def _views(home: dict[str, Figures]) -> dict[str, View]:
    return {
        sid: View(
            session_snapshot(
                sid,
                last,
                path=f"sessions/{project}/{sid}/session.v4.jsonl.zstd",
                cwd=cwd,
                cost=cost,
            )
        )
        for sid, (last, project, cwd, cost) in home.items()
    }


Sums = tuple[
    dict[int, dict[Slot, Buckets]], dict[str, dict[Slot, Buckets]], dict[str, dict[str, int]]
]


def by_hand(views: dict[str, View]) -> Sums:
    """Every sum made again the plainest way: by UTC day, by project (on no day), and the
    sessions of each project by working folder."""
    days: dict[int, dict[Slot, list[int]]] = {}
    projects: dict[str, dict[Slot, list[int]]] = {}
    cwds: dict[str, dict[str, int]] = {}
    for view in views.values():
        shot = view.snapshot
        project = shot.path.split("/")[1]
        folders = cwds.setdefault(project, {})
        folders[shot.cwd or ""] = folders.get(shot.cwd or "", 0) + 1
        in_project = projects.setdefault(project, {})
        for slot, tokens in (*shot.cost.requests, *shot.cost.summaries):
            for kept, key in ((days.setdefault(slot[4], {}), slot), (in_project, undated(slot))):
                found = kept.setdefault(key, [0, 0, 0, 0])
                for i in range(4):
                    found[i] += tokens[i]

    def exact(kept: dict[Slot, list[int]]) -> dict[Slot, Buckets]:
        return {s: (t[0], t[1], t[2], t[3]) for s, t in kept.items() if any(t)}

    day_sums = {day: exact(kept) for day, kept in days.items() if exact(kept)}
    return day_sums, {p: exact(kept) for p, kept in projects.items()}, cwds


@settings(max_examples=200, deadline=None)
@given(
    first=st.dictionaries(st.sampled_from(IDS), session_st, max_size=len(IDS)),
    steps=st.lists(
        st.dictionaries(st.sampled_from(IDS), session_st | st.none(), max_size=4),
        min_size=1,
        max_size=8,
    ),
)
def test_the_spend_kept_by_the_tree_equals_the_sums_made_from_nothing(
    first: dict[str, Figures], steps: list[dict[str, Figures | None]]
) -> None:
    views = _views(first)
    tree = HomeTree.build([v.snapshot for v in views.values()], lambda s: views[s.session_id].gauge)
    assert tree.spend.sums() == by_hand(views)
    book = RateBook()
    for step in steps:
        new = dict(views)
        for sid, figures in step.items():
            if figures is None:
                new.pop(sid, None)  # the session went
            else:
                new.update(_views({sid: figures}))
        touched = {sid for sid in views.keys() | new.keys() if views.get(sid) is not new.get(sid)}
        views = new
        tree = tree.updated(views, touched)
        assert tree.spend.sums() == by_hand(views)
        fresh = HomeSpend.of(v.snapshot for v in views.values())
        for name, kept in tree.spend.projects.items():
            assert kept.amount(book).dollars == close(fresh.projects[name].amount(book).dollars)
            assert kept.amount(book).unrated == fresh.projects[name].amount(book).unrated


def test_an_update_of_one_session_today_keeps_every_other_day_and_project() -> None:
    """Cost follows the change: the days and projects the changed session is not in are
    the same objects (their dollars memoised), only its day and project are new."""
    today, past = 739_862, 739_800
    old: Slot = ("deepseek-v4-pro", "p", False, 40, past)
    now: Slot = ("deepseek-v4-pro", "p", False, 41, today)
    quiet = session_snapshot(
        "quiet",
        1,
        path="sessions/--a--/quiet/log",
        cost=SessionCost(requests=((old, (1, 2, 3, 0)),)),
    )
    busy = session_snapshot(
        "busy", 2, path="sessions/--b--/busy/log", cost=SessionCost(requests=((now, (5, 5, 5, 0)),))
    )
    views = {"quiet": View(quiet), "busy": View(busy)}
    # Enough sessions that one changed is updated, not laid out from nothing (REBUILD_SHARE).
    views |= {f"idle{i}": View(session_snapshot(f"idle{i}", 0)) for i in range(6)}
    tree = HomeTree.build([v.snapshot for v in views.values()], lambda s: views[s.session_id].gauge)
    spend = tree.spend
    book = RateBook()
    past_dollars = spend.days[past].quarters(book)
    grown = session_snapshot(
        "busy", 3, path="sessions/--b--/busy/log", cost=SessionCost(requests=((now, (9, 9, 9, 0)),))
    )
    views["busy"] = View(grown)
    after = tree.updated(views, {"busy"}).spend
    assert after.days[past] is spend.days[past] and after.days[past].quarters(book) is past_dollars
    assert after.projects["--a--"] is spend.projects["--a--"]
    assert after.days[today] is not spend.days[today]
    assert after.days[today].by_slot == {now: (9, 9, 9, 0)}
    assert after.projects["--b--"].by_slot == {undated(now): (9, 9, 9, 0)}
    # Gone: its day and project with it.
    del views["busy"]
    gone = tree.updated(views, {"busy"}).spend
    assert today not in gone.days and "--b--" not in gone.projects
