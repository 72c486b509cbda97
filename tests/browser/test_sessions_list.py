"""The sessions list: rows come and go live, and the filter hides rows in the page."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from dshweb.core.display import context_reading
from dshweb.core.index import HomeIndex
from tests.browser.conftest import LIVE, WAIT_MS, BrowserHome, SameDocument
from tests.browser.homes import PROFILE, create_session, fixture_log
from tests.browser.server import DshwebServer

pytestmark = pytest.mark.browser

NEW = "plain-turns"


def _row_ids(page: Page, *, shown_only: bool = False) -> list[str]:
    selector = "#session-rows > li[data-session-id]" + (":not([hidden])" if shown_only else "")
    # One script run: a socket message may replace or reorder rows between two calls.
    ids: list[str] = page.eval_on_selector_all(
        selector, "rows => rows.map(r => r.dataset.sessionId)"
    )
    return ids


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
    expected = context_reading(index.snapshot(log.parent))
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


def test_filter_box_and_live_idle_choice_hide_rows(page: Page, server: DshwebServer) -> None:
    page.goto("/")
    every = _row_ids(page)
    assert LIVE in every and len(every) >= 3
    expect(_row(page, LIVE)).to_have_attribute("data-live", "1")

    page.locator("#filter-q").press_sequentially("manual-compact")
    expect(page.locator("#session-count")).to_have_attribute("data-shown", "1")
    assert _row_ids(page, shown_only=True) == ["manual-compact"]
    expect(_row(page, "auto-compact")).to_be_hidden()

    page.locator("#filter-q").fill("manual-compact no-such-word")
    expect(page.locator("#session-count")).to_have_attribute("data-shown", "0")
    expect(page.locator("#sessions-none-match")).to_be_visible()

    page.locator("#filter-q").fill("")
    expect(page.locator("#session-count")).to_have_attribute("data-shown", str(len(every)))

    page.locator("#filter-state label", has_text="Live").click()
    expect(page.locator("#session-count")).to_have_attribute("data-shown", "1")
    assert _row_ids(page, shown_only=True) == [LIVE]
    expect(page).to_have_url(f"{server.url}/?state=live")

    page.locator("#filter-state label", has_text="Idle").click()
    expect(page.locator("#session-count")).to_have_attribute("data-shown", str(len(every) - 1))
    assert sorted(_row_ids(page, shown_only=True)) == sorted(set(every) - {LIVE})
    expect(_row(page, LIVE)).to_be_hidden()
