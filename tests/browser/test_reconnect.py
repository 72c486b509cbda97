"""An open page survives a server restart: its socket comes back and updates go on."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import WAIT_MS, BrowserHome, SameDocument
from tests.browser.homes import append_frames
from tests.browser.server import DshwebServer

pytestmark = pytest.mark.browser

RECONNECT_MS = 20_000
"""The page's back-off is capped at 10 s; a restart takes a second or two."""


def test_socket_reconnects_after_a_server_restart(
    page: Page, server: DshwebServer, home: BrowserHome
) -> None:
    plan = home.continuations["big-tools"]
    page.goto("/sessions/big-tools/")
    status = page.locator("#live-status")
    ring = page.locator("#context-ring")
    expect(status).to_have_attribute("data-state", "open")
    expect(ring).to_have_attribute("data-percent", str(plan.before.reading.percent))
    same = SameDocument(page)

    try:
        server.stop()
        expect(status).not_to_have_attribute("data-state", "open", timeout=WAIT_MS)
    finally:
        server.start()
    expect(status).to_have_attribute("data-state", "open", timeout=RECONNECT_MS)

    append_frames(plan.log, plan.rest)

    after = plan.after.reading
    expect(ring).to_have_attribute("data-percent", str(after.percent), timeout=WAIT_MS)
    expect(ring).to_have_attribute("data-band", after.band.value)
    expect(ring).to_have_attribute("data-used", str(after.used))
    same.check()
