"""dshweb behind a TLS-terminating reverse proxy, for real: daphne in a child process as
``scripts/start`` runs it with ``DSHWEB_BEHIND_TLS_PROXY=1``, and a proxy on 127.0.0.1
(:mod:`tests.tls_proxy`) in front of it with a certificate made for the test. A person
signs in through ``https://`` with the form's CSRF token and the browser's ``Origin``.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import urlencode

import pytest

from tests.browser.server import HOST, PASSWORD, USERNAME, DshwebServer
from tests.tls_proxy import TlsProxy, self_signed_certificate

_SERVERS: dict[int, DshwebServer] = {}
"""The server behind each proxy, by port: its log says why a request was refused."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: str

    def cookie(self, name: str) -> str:
        """The ``Set-Cookie`` line that sets ``name`` (empty when none does)."""
        lines = self.headers.get_all("Set-Cookie") or []
        return next((line for line in lines if line.startswith(f"{name}=")), "")


@pytest.fixture(
    scope="module",
    # As scripts/start runs daphne behind a proxy (the client's address from the proxy's
    # X-Forwarded-For), and as plain daphne: the settings alone must be enough.
    params=[["--proxy-headers"], []],
    ids=["scripts-start", "plain-daphne"],
)
def proxy(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[TlsProxy]:
    folder = tmp_path_factory.mktemp("https-proxy")
    (folder / "home" / "sessions").mkdir(parents=True)
    server = DshwebServer(
        home=folder / "home",
        data_dir=folder / "data",
        extra_env={"DSHWEB_BEHIND_TLS_PROXY": "1"},
        daphne_options=request.param,
        probe_headers={"X-Forwarded-Proto": "https"},
    )
    server.prepare()
    server.start()
    cert, key = self_signed_certificate(folder)
    tls = TlsProxy(upstream_port=server.port, cert=cert, key=key)
    tls.start()
    _SERVERS[tls.upstream_port] = server
    try:
        yield tls
    finally:
        tls.stop()
        server.stop()


def _request(proxy: TlsProxy, method: str, path: str, body: str = "", **headers: str) -> Reply:
    connection = http.client.HTTPSConnection(
        HOST, proxy.port, context=proxy.client_context(), timeout=30
    )
    try:
        connection.request(method, path, body=body.encode(), headers=headers)
        reply = connection.getresponse()
        return Reply(reply.status, reply.headers, reply.read().decode(errors="replace"))
    finally:
        connection.close()


def _cookie_value(set_cookie: str) -> str:
    cookie: SimpleCookie = SimpleCookie(set_cookie)
    (morsel,) = cookie.values()
    return morsel.value


def _sign_in(proxy: TlsProxy, origin: str) -> tuple[Reply, Reply]:
    """The login page, then the form posted with its token, as a browser would."""
    page = _request(proxy, "GET", "/accounts/login/")
    assert page.status == 200, page.body[:500]
    (token,) = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.body)
    form = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token}
    posted = _request(
        proxy,
        "POST",
        "/accounts/login/",
        urlencode(form | {"next": ""}),
        Cookie=f"csrftoken={_cookie_value(page.cookie('csrftoken'))}",
        Origin=origin,
        Referer=f"{proxy.origin}/accounts/login/",
        **{"Content-Type": "application/x-www-form-urlencoded"},
    )
    return page, posted


def test_sign_in_through_a_tls_proxy(proxy: TlsProxy) -> None:
    page, posted = _sign_in(proxy, proxy.origin)
    server = _SERVERS[proxy.upstream_port]
    assert posted.status == 302, f"HTTP {posted.status}\n{server.output(lines=5)}"
    assert posted.headers["Location"] == "/"
    session = posted.cookie("sessionid")
    assert "; Secure" in session and "; HttpOnly" in session, session
    assert "; Secure" in page.cookie("csrftoken"), page.cookie("csrftoken")
    assert page.headers["Strict-Transport-Security"] == "max-age=31536000"

    home = _request(proxy, "GET", "/", Cookie=f"sessionid={_cookie_value(session)}")
    assert home.status == 200, home.body[:500]
    assert "Sign out" in home.body


def test_a_form_from_another_origin_is_still_refused(proxy: TlsProxy) -> None:
    _, posted = _sign_in(proxy, "https://evil.example")
    assert posted.status == 403
    assert "Form refused" in posted.body and "Nothing was changed." in posted.body


def test_plain_http_is_sent_to_https(proxy: TlsProxy) -> None:
    # Straight to daphne, without the proxy's X-Forwarded-Proto.
    connection = http.client.HTTPConnection(HOST, proxy.upstream_port, timeout=30)
    try:
        connection.request("GET", "/accounts/login/", headers={"Host": "localhost"})
        reply = connection.getresponse()
    finally:
        connection.close()
    assert reply.status == 301
    assert reply.headers["Location"] == "https://localhost/accounts/login/"
