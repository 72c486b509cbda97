"""A page whose sign-in ends stops receiving, and says so: signing out in one tab closes
the other tab's socket (4401, from the server); the page tries once more, is refused, and
its status says the browser is signed out. A sign-in that ended while the browser holds
another (a renewed session) picks up again on that one try."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, WebSocketRoute, expect
from pytest_playwright.pytest_playwright import CreateContextCallback

from dshweb.sessions.consumers import UNAUTHORIZED
from tests.browser.conftest import WAIT_MS
from tests.support.server import PASSWORD, USERNAME, DshwebServer

pytestmark = pytest.mark.browser

SIGNED_OUT = "signed out: sign in again for live updates"


@pytest.mark.browser_context_args(storage_state=None)
def test_signing_out_in_one_tab_stops_the_other_tabs_page(
    new_context: CreateContextCallback, server: DshwebServer
) -> None:
    # A sign-in of its own: the module's shared one stays for the other tests.
    context = new_context()
    tab = context.new_page()
    tab.goto("/accounts/login/")
    tab.fill("#id_username", USERNAME)
    tab.fill("#id_password", PASSWORD)
    tab.click("#login button[type=submit]")
    tab.wait_for_url(f"{server.url}/")
    watched = context.new_page()
    opened: list[str] = []
    watched.on("websocket", lambda socket: opened.append(socket.url))
    watched.goto("/homes/local/sessions/manual-compact/")
    status = watched.locator("#live-status")
    expect(status).to_have_attribute("data-state", "open")

    tab.click(".sign-out button")
    tab.wait_for_url(re.compile(r"/accounts/login/"))

    expect(status).to_have_text(SIGNED_OUT, timeout=WAIT_MS)
    expect(status).to_have_attribute("data-state", "closed")
    assert len(opened) == 2, opened  # its own, and the one more try
    watched.wait_for_timeout(2_000)
    assert len(opened) == 2, opened  # and no more


def test_a_socket_closed_while_the_browser_is_still_signed_in_comes_back(page: Page) -> None:
    opened: list[str] = []

    def first_one_closed(socket: WebSocketRoute) -> None:
        opened.append(socket.url)
        server = socket.connect_to_server()
        if len(opened) == 1:  # its sign-in ended once the page had its state

            def then_closed(message: str | bytes) -> None:
                socket.send(message)
                socket.close(code=UNAUTHORIZED, reason="")

            server.on_message(then_closed)

    page.route_web_socket(re.compile(r"/ws/sessions/$"), first_one_closed)
    page.goto("/")
    for _ in range(WAIT_MS // 100):
        if len(opened) == 2:
            break
        page.wait_for_timeout(100)
    assert len(opened) == 2, opened
    status = page.locator("#live-status")
    expect(status).to_have_attribute("data-state", "open", timeout=WAIT_MS)
    expect(status).not_to_have_text(SIGNED_OUT)
