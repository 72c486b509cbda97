"""The demo home as a new user meets it, in real Chromium: a dshweb with no DSH home shows
the bundled demo, whose Compact works (a ``dsh web`` of its own, the real DSH runtime,
the demo's stand-in model writing the summary), and whose pages then say who holds the
session compacted; the replayed session says why it has no Compact.

This module overrides the package's ``server`` fixture with a demo server of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.support.server import DemoServer, DshwebServer, serving

pytestmark = [pytest.mark.browser, pytest.mark.dsh]

COMPACT_MS = 90_000
"""Longest wait for the first Compact: it starts the demo's ``dsh web`` first."""
DONE = re.compile(
    r"Compacted \d+ history items \(~[\d,]+ tokens\); context \S+ → \S+ \(freed \S+\)"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    root = tmp_path_factory.mktemp("demo-server")
    yield from serving(DemoServer(root / "no-dsh-home", root / "data"))


def test_compact_works_on_the_demo_and_the_page_names_who_holds_the_session(
    page: Page,
) -> None:
    page.goto("/homes/local/sessions/csv-importer/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#session-header .badge-idle")).to_be_visible()
    button = page.locator("#compact-button")
    expect(button).to_have_attribute("type", "submit")
    expect(button).not_to_have_attribute("aria-disabled", "true")
    expect(page.locator("#compact-demo")).to_contain_text("a stand-in model on this machine")

    button.click()
    status = page.locator("#compact-status")
    expect(status).to_have_attribute("data-state", "done", timeout=COMPACT_MS)
    expect(status).to_have_text(DONE)
    # dsh web keeps the session it compacted: the page says it holds it, not just "live".
    held = page.locator('#session-header [data-held-by="dsh-web"]')
    expect(held).to_have_text("held by dsh web")
    expect(page.locator("#held-by")).to_contain_text(
        "Held by the dsh web that dshweb runs for Compact"
    )
    page.goto("/")
    row = page.locator('li[data-session-id="csv-importer"]')
    expect(row.locator('[data-held-by="dsh-web"]')).to_have_text("held by dsh web")
    other = page.locator('li[data-session-id="sales-report"]')
    expect(other.locator(".badge-live")).to_have_count(0)


def test_the_replayed_session_says_why_it_has_no_compact(page: Page) -> None:
    page.goto("/homes/local/sessions/demo-live/")
    expect(page.locator("#session-header .badge-live")).to_have_text("live")
    button = page.locator("#compact-button")
    expect(button).to_have_attribute("aria-disabled", "true")
    expect(button).to_have_attribute("type", "button")
    why = page.locator("#compact-why")
    expect(why).to_have_attribute("data-reason", "replayed")
    expect(why).to_contain_text("The demo plays this recorded session back")


def test_every_demo_session_has_a_price_and_a_title(page: Page) -> None:
    page.goto("/")
    rows = page.locator("#session-rows > li")
    expect(rows).to_have_count(5)
    for row in rows.all():
        title = row.locator(".row-title a").inner_text()
        assert not title.startswith("!"), title
        expect(row).to_contain_text("cost $")
        expect(row).not_to_contain_text("unknown")
