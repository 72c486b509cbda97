"""A page of another origin on the same machine gets no socket, though the browser sends it
the user's cookies (cookies ignore ports): real Chromium, the real server, and a second
web server on another port of 127.0.0.1 serving the foreign page."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.support.server import HOST, DshwebServer

pytestmark = pytest.mark.browser

OPEN_SOCKET = """async (url) => await new Promise((resolve) => {
    const seen = {opened: false, messages: [], code: null};
    const socket = new WebSocket(url);
    socket.onopen = () => { seen.opened = true; };
    socket.onmessage = (event) => {
        seen.messages.push(String(event.data).slice(0, 300));
        socket.close();
    };
    socket.onclose = (event) => { seen.code = event.code; resolve(seen); };
    setTimeout(() => resolve(seen), 8000);
})"""
"""Open ``url`` and report what came: opened or not, the messages, the close code."""

FOREIGN_PAGE = b"<!doctype html><title>another site on this machine</title><p>hello</p>"


class _ForeignPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(FOREIGN_PAGE)))
        self.end_headers()
        self.wfile.write(FOREIGN_PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def foreign_site() -> Iterator[str]:
    """Another web server on a free port of 127.0.0.1: another origin, the same cookies."""
    site = ThreadingHTTPServer((HOST, 0), _ForeignPage)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    yield f"http://{HOST}:{site.server_address[1]}"
    site.shutdown()
    site.server_close()
    thread.join(5)


def test_a_page_on_another_port_gets_no_socket(
    page: Page, server: DshwebServer, foreign_site: str
) -> None:
    socket_url = f"ws://{HOST}:{server.port}/ws/sessions/"
    page.goto(f"{foreign_site}/")
    assert page.title() == "another site on this machine"
    assert any(c["name"] == "sessionid" for c in page.context.cookies(socket_url))
    foreign = page.evaluate(OPEN_SOCKET, socket_url)
    assert foreign["messages"] == [], "a foreign page read the sessions list"
    assert foreign["opened"] is False
    assert foreign["code"] == 1006  # the handshake was refused

    page.goto("/")  # the same socket from dshweb's own page, same cookies
    own = page.evaluate(OPEN_SOCKET, socket_url)
    assert own["opened"] is True
    # The list page's first message: its counts, then its rows.
    assert any('id="session-counts"' in message for message in own["messages"]), own
