"""The ledger a page at a time in real Chromium: newest first, older pages in place (and
kept there while the log grows and the socket replaces the card), plain links without
JavaScript, and the whole series one click away.

Its own home and server: a session with 60 folds, which no fixture home has.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import WAIT_MS, SameDocument
from tests.support.compactionlog import long_session, write_session
from tests.support.homes import append_frames
from tests.support.logbuilder import frame
from tests.support.server import DshwebServer, serving

pytestmark = pytest.mark.browser

MANY = "many-folds"


class LedgerHome:
    def __init__(self, root: Path) -> None:
        self.path = root / "home"
        (self.path / "sessions").mkdir(parents=True)
        events = long_session(steps=610, compaction_every=10)
        ends = [i for i, e in enumerate(events) if e["type"] == "compaction/end"]
        cut = ends[59] + 1  # the log holds 60 folds; the rest brings the 61st
        self.log = write_session(self.path, MANY, events[:cut])
        self.rest = events[cut:]

    def grow(self) -> None:
        append_frames(self.log, [frame(*self.rest)])


@pytest.fixture(scope="module")
def ledger_home(tmp_path_factory: pytest.TempPathFactory) -> LedgerHome:
    return LedgerHome(tmp_path_factory.mktemp("ledger"))


@pytest.fixture(scope="module")
def server(
    ledger_home: LedgerHome, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DshwebServer]:
    """This module's own server, watching ``ledger_home`` (the package's ``page`` signs in
    to it)."""
    yield from serving(DshwebServer(ledger_home.path, tmp_path_factory.mktemp("ledger-data")))


def _numbers(page: Page, rows: str) -> list[int]:
    return [int(n) for n in page.locator(rows).evaluate_all("rs => rs.map(r => r.dataset.fold)")]


NEWEST = "#ledger > .table-scroll tbody tr"
OLDER = "#ledger-older tbody tr"


def test_ledger_pages_in_place_and_keeps_the_page_while_the_log_grows(
    page: Page, ledger_home: LedgerHome, artifacts: Path
) -> None:
    page.goto(f"/homes/local/sessions/{MANY}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(page.locator(NEWEST)).to_have_count(25)
    assert _numbers(page, NEWEST) == list(range(60, 35, -1))
    same = SameDocument(page)

    page.locator("#ledger .page-older").first.click()
    expect(page.locator(OLDER)).to_have_count(25)
    assert _numbers(page, OLDER) == list(range(35, 10, -1))
    page.locator("#ledger-older .page-older").click()
    expect(page.locator(OLDER)).to_have_count(10)
    assert _numbers(page, OLDER) == list(range(10, 0, -1))
    page.locator("#ledger-older .page-newer").click()
    expect(page.locator(OLDER).first).to_have_attribute("data-fold", "35")

    ledger_home.grow()  # fold 61: the socket sends the card again

    expect(page.locator("#ledger")).to_have_attribute("data-folds", "61", timeout=WAIT_MS)
    expect(page.locator(NEWEST).first).to_have_attribute("data-fold", "61")
    expect(page.locator(NEWEST)).to_have_count(25)
    assert _numbers(page, OLDER) == list(range(35, 10, -1))  # still the page the reader chose
    expect(page.locator("#ledger .ledger-summary")).to_contain_text("61 compactions")
    same.check()
    page.screenshot(path=artifacts / "ledger-pages.png", full_page=True)

    with page.expect_download() as info:
        page.locator('#ledger .downloads a:text("CSV")').click()
    download = info.value
    assert download.suggested_filename == f"{MANY}-ledger.csv"
    with Path(download.path()).open(newline="") as handle:
        header, *rows = csv.reader(handle)
    assert header[0] == "number" and [int(r[0]) for r in rows] == list(range(1, 62))


@pytest.mark.browser_context_args(java_script_enabled=False)
def test_ledger_pages_without_javascript(page: Page) -> None:
    page.goto(f"/homes/local/sessions/{MANY}/")
    expect(page.locator(NEWEST).first).to_have_attribute("data-fold", str(_compactions(page)))
    page.locator("#ledger .page-older").first.click()
    page.wait_for_url("**/ledger.html?before=*")
    newest = _compactions(page)
    assert _numbers(page, OLDER) == list(range(newest - 25, newest - 50, -1))
    page.locator("#ledger-older .page-older").click()
    page.wait_for_url(f"**/ledger.html?before={newest - 50 + 1}")
    assert _numbers(page, OLDER)[0] == newest - 50


def _compactions(page: Page) -> int:
    return int(page.locator("#ledger").get_attribute("data-folds") or 0)
