"""The session page follows its log live: DSH appends, the ring changes, no reload; a
fold that lands is noted and announced."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_playwright.pytest_playwright import CreateContextCallback

from dshweb.sessions.display.figures import format_page_tokens
from tests.browser.conftest import WAIT_MS, BrowserHome, SameDocument
from tests.support.homecopies import copy_as
from tests.support.homes import append_frames, fixture_log
from tests.support.logbuilder import frames_of
from tests.support.server import DshwebServer

pytestmark = pytest.mark.browser


def test_ring_follows_appended_frames_without_reload(
    page: Page, server: DshwebServer, home: BrowserHome, artifacts: Path
) -> None:
    plan = home.continuations["auto-compact"]
    before, after = plan.before.gauge, plan.after.gauge
    page.goto("/homes/local/sessions/auto-compact/")
    ring = page.locator("#context-ring")
    expect(ring).to_have_attribute("data-percent", str(before.percent))
    expect(ring).to_have_attribute("data-band", before.band.value)
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    same = SameDocument(page)

    append_frames(plan.log, plan.rest)

    expect(ring).to_have_attribute("data-percent", str(after.percent), timeout=WAIT_MS)
    expect(ring).to_have_attribute("data-band", after.band.value)
    expect(ring).to_have_attribute("data-used", str(after.used))
    expect(ring.locator(".ring-percent")).to_have_text(f"{after.percent}%")
    breakdown = plan.after.snapshot.context_breakdown
    parts = page.locator("#breakdown")
    expect(parts).to_have_attribute("data-system", str(breakdown["systemTokens"]))
    expect(parts).to_have_attribute("data-tools", str(breakdown["toolsTokens"]))
    expect(parts).to_have_attribute("data-messages", str(breakdown["messageTokens"]))
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    same.check()
    page.screenshot(path=artifacts / "session.png", full_page=True)


COMPACTED = {"en-US": "Folded just now: {} → {}", "zh-CN": "刚刚折叠：{} → {}"}
"""What a page says of a fold that lands, in each language (the figures as the ring's)."""


@pytest.mark.parametrize("locale", COMPACTED)
def test_a_compaction_that_lands_is_noted_on_the_ring_and_announced(
    new_context: CreateContextCallback, home: BrowserHome, artifacts: Path, locale: str
) -> None:
    """A fold appended to a session while its page and the list are open: a note on the
    ring and in the list row says what it freed, and each page's live region says it, in
    the page's language."""
    log = fixture_log("auto-compact")
    frames = frames_of(log.path)
    name = f"fold-news-{locale}"
    target = copy_as(home.path, log, name, frames=len(frames) // 3)
    context = new_context(locale=locale)
    page, listing = context.new_page(), context.new_page()
    listing.goto("/")
    page.goto(f"/homes/local/sessions/{name}/")
    for shown in (page, listing):
        expect(shown.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#announcements")).to_have_text("")
    said = COMPACTED[locale]
    head = said.split("{}")[0]

    append_frames(target, frames[len(frames) // 3 :])

    note = page.locator("#fold-note")
    expect(note).to_contain_text(head, timeout=WAIT_MS)
    before, after = note.get_attribute("data-before"), note.get_attribute("data-after")
    assert before and after
    words = said.format(format_page_tokens(int(before)), format_page_tokens(int(after)))
    expect(note).to_have_text(words)
    expect(note).to_be_visible()
    expect(page.locator("#announcements")).to_have_text(words)
    assert page.locator("#announcements").get_attribute("aria-live") == "polite"
    page.screenshot(path=artifacts / f"fold-note-{locale}.png")
    row_note = listing.locator(f"#fold-note-local_2f_{name}")
    expect(row_note).to_contain_text(head, timeout=WAIT_MS)
    expect(listing.locator("#announcements")).to_contain_text(head)


@pytest.mark.parametrize(
    ("width", "height", "whole"),
    [
        (1440, 900, ("#context-ring svg", ".band-pill", "#forecast")),
        (390, 844, ("#context-ring svg",)),
    ],
)
def test_the_page_leads_with_its_headline(
    new_context: CreateContextCallback, width: int, height: int, whole: tuple[str, ...]
) -> None:
    """The ring (and on a desktop its band, the point and the forecast) is in the first
    screen of the session page, before the session's details."""
    page = new_context().new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.goto("/homes/local/sessions/manual-compact/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    # Read at once in the page (a pushed update may replace a part between two reads).
    boxes = page.evaluate(
        "(selectors) => Object.fromEntries(selectors.map(s => {"
        " const r = document.querySelector(s).getBoundingClientRect();"
        " return [s, [r.top, r.bottom]]; }))",
        [*whole, "#context-ring", "#session-facts"],
    )
    for selector in whole:
        top, bottom = boxes[selector]
        assert top >= 0 and bottom <= height, f"{selector} from {top} to {bottom}"
    assert boxes["#context-ring"][0] < boxes["#session-facts"][0]
