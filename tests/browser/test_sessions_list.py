"""The sessions list: rows come and go live; the server filters, sorts and pages it, the
page asks it again through htmx and keeps the query in the address."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from tests.browser.conftest import LIVE, WAIT_MS, BrowserHome, SameDocument
from tests.support.homes import PROFILE, create_session, fixture_log
from tests.support.server import DshwebServer

pytestmark = pytest.mark.browser

NEW = "plain-turns"


def _row_ids(page: Page) -> list[str]:
    # One script run: a socket message may replace or reorder rows between two calls.
    ids: list[str] = page.eval_on_selector_all(
        "#session-rows > li[data-session-id]", "rows => rows.map(r => r.dataset.sessionId)"
    )
    return ids


def _rows_data(page: Page, name: str) -> list[str]:
    values: list[str] = page.eval_on_selector_all(
        "#session-rows > li[data-session-id]", f"rows => rows.map(r => r.dataset.{name})"
    )
    return values


def _expect_rows(page: Page, ids: list[str]) -> None:
    """Wait until the list shows exactly these rows, in this order."""
    rows = page.locator("#session-rows > li[data-session-id]")
    expect(rows).to_have_count(len(ids))
    for number, session_id in enumerate(ids):
        expect(rows.nth(number)).to_have_attribute("data-session-id", session_id)


def _row(page: Page, session_id: str) -> Locator:
    return page.locator(f'#session-rows > li[data-session-id="{session_id}"]')


def test_new_session_row_appears_then_goes_without_reload(
    page: Page, server: DshwebServer, home: BrowserHome, artifacts: Path
) -> None:
    page.goto("/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    before = _row_ids(page)
    assert before and NEW not in before
    same = SameDocument(page)

    log = create_session(home.path, fixture_log(NEW))

    index = HomeIndex(home.path, profile=PROFILE)
    index.refresh([log.parent])
    expected = context_gauge(index.snapshot(log.parent))
    assert expected.percent is not None
    row = _row(page, NEW)
    expect(row).to_have_count(1, timeout=WAIT_MS)
    expect(row).to_have_attribute("data-percent", str(expected.percent))
    expect(row).to_have_attribute("data-band", expected.band.value)
    expect(row.locator(".percent")).to_have_text(f"{expected.percent}%")
    expect(page.locator("#session-count")).to_have_attribute("data-total", str(len(before) + 1))
    assert sorted(_row_ids(page)) == sorted([*before, NEW])
    page.screenshot(path=artifacts / "list.png", full_page=True)

    shutil.rmtree(log.parent)

    expect(row).to_have_count(0, timeout=WAIT_MS)
    expect(page.locator("#session-count")).to_have_attribute("data-total", str(len(before)))
    assert sorted(_row_ids(page)) == sorted(before)
    same.check()


def test_filter_asks_the_server_and_keeps_the_query_in_the_address(
    page: Page, server: DshwebServer
) -> None:
    page.goto("/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    every = _row_ids(page)
    assert LIVE in every and len(every) >= 3
    expect(_row(page, LIVE)).to_have_attribute("data-live", "1")
    same = SameDocument(page, new_address=True)

    page.locator("#filter-q").press_sequentially("manual-compact")
    _expect_rows(page, ["manual-compact"])  # the others are not on the page at all
    expect(page).to_have_url(f"{server.url}/?q=manual-compact")
    expect(page.locator("#session-count")).to_have_attribute("data-shown", "1")
    expect(page.locator("#session-count")).to_have_attribute("data-total", str(len(every)))
    # The new list section has its own socket, for this query.
    expect(page.locator("#sessions")).to_have_attribute(
        "ws-connect", "/ws/sessions/?q=manual-compact"
    )
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")

    page.locator("#filter-q").fill("manual-compact no-such-word")
    _expect_rows(page, [])
    expect(page.locator("#sessions-none-match")).to_be_visible()

    page.locator("#filter-q").fill("")
    _expect_rows(page, every)
    expect(page).to_have_url(f"{server.url}/")

    page.locator("#filter-state label", has_text="Live").click()
    _expect_rows(page, [LIVE])
    expect(page).to_have_url(f"{server.url}/?state=live")

    page.locator("#filter-state label", has_text="Idle").click()
    _expect_rows(page, [session for session in every if session != LIVE])
    expect(page).to_have_url(f"{server.url}/?state=idle")

    band = _row(page, "manual-compact").get_attribute("data-band")
    assert band
    page.locator("#filter-band").select_option(band)
    expect(page).to_have_url(f"{server.url}/?state=idle&band={band}")
    expect(_row(page, "manual-compact")).to_have_count(1)
    assert set(_rows_data(page, "band")) == {band}
    same.check()

    # A reload, or the address shared, shows the same list with the same choices.
    page.reload()
    expect(page.locator("#filter-band")).to_have_value(band)
    expect(page.locator('#filter-state input[value="idle"]')).to_be_checked()
    assert LIVE not in _row_ids(page)


def test_sort_by_percent_and_headroom(page: Page, server: DshwebServer) -> None:
    page.goto("/")
    every = _row_ids(page)
    same = SameDocument(page, new_address=True)

    page.locator("#list-sort label", has_text="Percent").click()
    expect(page).to_have_url(f"{server.url}/?sort=percent")
    expect(page.locator("#sessions")).to_have_attribute("ws-connect", "/ws/sessions/?sort=percent")
    percents = [int(p) if p else -1 for p in _rows_data(page, "percent")]
    assert percents == sorted(percents, reverse=True)
    assert set(_rows_data(page, "depth")) == {"0"}  # flat
    assert sorted(_row_ids(page)) == sorted(every)

    page.locator("#list-sort label", has_text="Headroom").click()
    expect(page).to_have_url(f"{server.url}/?sort=headroom")
    headroom = _rows_data(page, "headroom")
    known = [int(h) for h in headroom if h]
    assert known == sorted(known)
    assert headroom == [*map(str, known), *[""] * (len(headroom) - len(known))]  # none last

    page.locator("#list-sort label", has_text="Activity").click()
    expect(page).to_have_url(f"{server.url}/")
    _expect_rows(page, every)
    same.check()


def test_pages_of_the_list(page: Page, server: DshwebServer, artifacts: Path) -> None:
    page.goto("/")
    every = _row_ids(page)
    assert len(every) >= 5
    pages = (len(every) + 1) // 2

    page.goto("/?per_page=2")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    _expect_rows(page, every[:2])
    pager = page.locator("#session-pager")
    expect(pager).to_be_visible()
    expect(pager).to_have_attribute("data-pages", str(pages))
    same = SameDocument(page, new_address=True)

    pager.locator('a[rel="next"]').click()
    expect(page).to_have_url(f"{server.url}/?page=2&per_page=2")
    _expect_rows(page, every[2:4])
    expect(page.locator("#session-count")).to_have_attribute("data-first", "3")
    expect(page.locator("#sessions")).to_have_attribute(
        "ws-connect", "/ws/sessions/?page=2&per_page=2"
    )
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")

    pager.locator(f'a[data-page="{pages}"]').last.click()
    expect(page).to_have_url(f"{server.url}/?page={pages}&per_page=2")
    _expect_rows(page, every[(pages - 1) * 2 :])
    expect(pager.locator('a[rel="next"]')).to_have_count(0)
    page.screenshot(path=artifacts / "list-last-page.png", full_page=True)

    # Filtering starts again at the first page, keeping the page size.
    page.locator("#filter-q").fill(every[0])
    expect(page).to_have_url(re.compile(r"/\?q=[^&]+&per_page=2$"))
    expect(_row(page, every[0])).to_have_count(1)
    page.locator("#filter-q").fill("")
    expect(page).to_have_url(f"{server.url}/?per_page=2")
    _expect_rows(page, every[:2])

    page.go_back()
    page.go_back()
    expect(page).to_have_url(f"{server.url}/?page={pages}&per_page=2")
    _expect_rows(page, every[(pages - 1) * 2 :])
    same.check()

    page.reload()
    _expect_rows(page, every[(pages - 1) * 2 :])
    expect(page.locator("#session-pager .pager-current")).to_have_text(str(pages))
