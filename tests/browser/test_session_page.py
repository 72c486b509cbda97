"""The session page follows its log live: DSH appends, the ring changes, no reload."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import WAIT_MS, BrowserHome, SameDocument
from tests.browser.homes import append_frames
from tests.browser.server import DshwebServer

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
