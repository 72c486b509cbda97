"""The ledger a page at a time, and the rows of the downloads."""

from __future__ import annotations

import pytest

from dshweb.core.fold.compactions import CompactCommand, Compaction, TimelinePoint
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import session_logs
from dshweb.core.log.times import iso_utc
from dshweb.sessions.display.ledger_pages import LEDGER_PAGE_SIZE, ledger_page, refused_tail
from dshweb.sessions.display.ledger_rows import COMPACTION_COLUMNS, compaction_row, timeline_row
from tests.conftest import FIXTURE_HOMES


def _compactions(count: int) -> tuple[Compaction, ...]:
    return tuple(Compaction("automatic", seq=10 * n, time=None) for n in range(1, count + 1))


# (folds, before) → (numbers shown, page.before, older, newer)
PAGES = [
    (60, None, range(60, 35, -1), 61, 36, None),
    (60, 61, range(60, 35, -1), 61, 36, None),
    (60, 10_000, range(60, 35, -1), 61, 36, None),
    (60, 36, range(35, 10, -1), 36, 11, 61),
    (60, 11, range(10, 0, -1), 11, None, 36),
    (60, 2, [1], 2, None, 27),
    (60, 1, [], 1, None, 26),
    (60, -5, [], 1, None, 26),
    (25, None, range(25, 0, -1), 26, None, None),
    (26, None, range(26, 1, -1), 27, 2, None),
    (0, None, [], 1, None, None),
    (0, 7, [], 1, None, None),
]


@pytest.mark.parametrize(("count", "before", "numbers", "end", "older", "newer"), PAGES)
def test_pages_are_newest_first_and_keep_the_ledgers_numbers(
    count: int,
    before: int | None,
    numbers: range | list[int],
    end: int,
    older: int | None,
    newer: int | None,
) -> None:
    compactions = _compactions(count)
    page = ledger_page(compactions, before=before)
    assert [row.number for row in page.rows] == list(numbers)
    assert all(row.compaction is compactions[row.number - 1] for row in page.rows)
    assert (page.before, page.older, page.newer, page.total) == (end, older, newer, count)
    assert page.newest == (newer is None)
    if page.rows:
        assert (page.last, page.first) == (max(numbers), min(numbers))


def test_older_links_visit_every_compaction_once_and_newer_links_come_back() -> None:
    compactions = _compactions(4 * LEDGER_PAGE_SIZE + 3)
    page = ledger_page(compactions)
    seen = [row.number for row in page.rows]
    befores = [page.before]
    while page.older is not None:
        page = ledger_page(compactions, before=page.older)
        seen += [row.number for row in page.rows]
        befores.append(page.before)
    assert seen == list(range(len(compactions), 0, -1))
    while page.newer is not None:
        page = ledger_page(compactions, before=page.newer)
        assert page.before == befores.pop(-2)
    assert page.newest and len(befores) == 1


def test_a_page_holds_at_least_one_compaction() -> None:
    with pytest.raises(ValueError, match="at least one fold"):
        ledger_page(_compactions(3), size=0)


@pytest.mark.parametrize(
    ("count", "shown", "more"), [(0, [], 0), (3, [3, 2, 1], 0), (12, [12, 11, 10, 9, 8], 7)]
)
def test_refused_commands_newest_few_and_how_many_more(
    count: int, shown: list[int], more: int
) -> None:
    commands = [
        CompactCommand(n, None, "/compact", "error", "busy", n + 1) for n in range(1, count + 1)
    ]
    tail = refused_tail(commands)
    assert ([c.seq for c in tail.shown], tail.more) == (shown, more)


# -- rows ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, None),
        (0, "1970-01-01T00:00:00.000Z"),
        (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (2**53 - 1, None),  # past any calendar: unknown, as on the page
    ],
)
def test_times_are_iso_utc(ms: int | None, text: str | None) -> None:
    assert iso_utc(ms) == text


def test_rows_carry_the_ledgers_figures() -> None:
    (log,) = session_logs(FIXTURE_HOMES / "auto-compact")
    tracker = SessionTracker(log)
    tracker.refresh()
    ledger = tracker.ledger.result(tracker.meter)
    compaction = ledger.compactions[1]
    row = dict(zip(COMPACTION_COLUMNS, compaction_row(2, compaction, RateBook()), strict=True))
    assert row["number"] == 2 and row["kind"] == "automatic" and row["status"] == "done"
    assert (row["seq"], row["end_seq"], row["turn"]) == (130, 134, 8)
    assert (row["shadowed_tokens"], row["checkpoint_tokens"]) == (3943, 178)
    assert (row["before"], row["after"], row["bought"]) == (13367, 9602, 13367 - 9602)
    assert (row["summary_input"], row["summary_output"]) == (2582, 76)
    assert row["time"] == iso_utc(compaction.time) and row["time_ms"] == compaction.time
    point = TimelinePoint(7, None, 123, "after", 3)
    assert timeline_row(point) == (7, None, None, 123, "after", 3)


def test_texts_from_the_log_encode_as_utf8() -> None:
    compaction = Compaction(
        "manual", seq=1, time=None, command="/compact \ud800", error="bad \udfff"
    )
    row = dict(zip(COMPACTION_COLUMNS, compaction_row(1, compaction, RateBook()), strict=True))
    assert row["command"] == "/compact \ufffd" and row["error"] == "bad \ufffd"
    assert all(v.encode() for v in (row["command"], row["error"]))
