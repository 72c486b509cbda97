"""The session page follows its log live: DSH appends, the ring changes, no reload; a
fold that lands is noted and announced."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import zstandard
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
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


NOTE_FOR_S = 6
"""How long a test keeps a fold's note: the stylesheet's own rule, ``--fold-landed-for``,
set shorter than its 12 s so that the test is short."""
_REPLACED = "(id) => document.getElementById(id)?.dataset.seen === undefined"
_MARK = "(id) => { document.getElementById(id).dataset.seen = 'yes'; }"
_HIDDEN = "(id) => getComputedStyle(document.getElementById(id)).visibility === 'hidden'"


def test_a_fold_note_stays_its_time_across_pushes(
    new_context: CreateContextCallback, home: BrowserHome
) -> None:
    """The note of a fold that lands stays on the ring and in the list row while the
    next steps push the ring and the row again, and is gone once its time is up: the
    stylesheet's ``--fold-landed-for`` (12 s) after it landed, not at the next push."""
    log = fixture_log("auto-compact")
    frames = frames_of(log.path)
    starts = [i for i, f in enumerate(frames) if b"compaction/start" in _text(f)]
    cut = starts[0]  # the log up to just before its first fold
    name = "fold-note-stays"
    target = copy_as(home.path, log, name, frames=cut)
    context = new_context()
    page, listing = context.new_page(), context.new_page()
    listing.goto("/")
    page.goto(f"/homes/local/sessions/{name}/")
    for shown in (page, listing):
        expect(shown.locator("#live-status")).to_have_attribute("data-state", "open")
    the_rule = "getComputedStyle(document.documentElement).getPropertyValue('--fold-landed-for')"
    assert page.evaluate(the_rule).strip() == "12s", "the note's time is the stylesheet's rule"
    for shown in (page, listing):
        shown.add_style_tag(content=f":root {{ --fold-landed-for: {NOTE_FOR_S}s; }}")
    # each page, the part a step pushes again, and the fold's note in it
    watched = [
        (page, "context-ring", "fold-note"),
        (listing, f"row-local_2f_{name}", f"fold-note-local_2f_{name}"),
    ]

    append_frames(target, frames[cut : cut + 2])  # compaction/start, then its end
    for shown, part, note in watched:
        expect(shown.locator(f"#{note}")).to_contain_text("Folded just now", timeout=WAIT_MS)
        shown.evaluate(_MARK, part)
    landed = time.monotonic()

    pushes = {part: 0 for _, part, _ in watched}
    for frame_ in frames[cut + 2 :]:
        append_frames(target, [frame_])
        for shown, part, note in watched:
            try:
                shown.wait_for_function(_REPLACED, arg=part, timeout=1000)
            except PlaywrightTimeoutError:
                continue  # this step did not change it
            pushes[part] += 1
            expect(shown.locator(f"#{note}")).to_be_visible(timeout=1)
            expect(shown.locator(f"#{note}")).to_contain_text("Folded just now", timeout=1)
            shown.evaluate(_MARK, part)
        if min(pushes.values()) >= 2:
            break
    assert min(pushes.values()) >= 2, f"the steps after the fold pushed each again: {pushes}"
    assert time.monotonic() - landed < NOTE_FOR_S * 0.8, "the pushes came within its time"

    for shown, _, note in watched:
        shown.wait_for_function(_HIDDEN, arg=note, timeout=(NOTE_FOR_S + 3) * 1000)
    assert time.monotonic() - landed >= NOTE_FOR_S - 1, "gone no earlier than its time"


def _text(frame_: bytes) -> bytes:
    return zstandard.ZstdDecompressor().decompress(frame_, 1 << 26)
