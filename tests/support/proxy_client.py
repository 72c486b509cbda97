"""Requests to dshweb through a TLS-terminating proxy, made as a browser makes them.

:func:`https_request` sends one request over HTTPS, trusting only the proxy's test
certificate; :func:`sign_in` loads the login page and posts its form back with the CSRF
token, its cookie and an ``Origin``, as a page of that origin would;
:func:`behind_a_proxy` is the dshweb server they go to. Both proxies of the
tests serve it: :class:`tests.support.tls_proxy.TlsProxy` and the docs' nginx and Caddy
(:mod:`tests.support.docs_proxies`).
"""

from __future__ import annotations

import http.client
import re
import ssl
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Protocol
from urllib.parse import urlencode

from tests.support.server import HOST, PASSWORD, USERNAME, DshwebServer

TIMEOUT = 30.0
FOREIGN = "https://evil.example"


def behind_a_proxy(folder: Path, **extra_env: str) -> DshwebServer:
    """dshweb on an empty home in ``folder``, started as ``scripts/start`` starts it behind
    a TLS proxy (the proxy's ``X-Forwarded-Proto`` in its readiness probe)."""
    (folder / "home" / "sessions").mkdir(parents=True)
    return DshwebServer(
        home=folder / "home",
        data_dir=folder / "data",
        extra_env={"DSHWEB_BEHIND_TLS_PROXY": "1", **extra_env},
        probe_headers={"X-Forwarded-Proto": "https"},
    )


class HttpsProxy(Protocol):
    @property
    def tls_port(self) -> int: ...

    @property
    def origin(self) -> str: ...

    def client_context(self) -> ssl.SSLContext: ...


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: str

    def cookie(self, name: str) -> str:
        """The ``Set-Cookie`` line that sets ``name`` (empty when none does)."""
        lines = self.headers.get_all("Set-Cookie") or []
        return next((line for line in lines if line.startswith(f"{name}=")), "")


def https_request(
    proxy: HttpsProxy, method: str, path: str, body: str = "", **headers: str
) -> Reply:
    connection = http.client.HTTPSConnection(
        HOST, proxy.tls_port, context=proxy.client_context(), timeout=TIMEOUT
    )
    try:
        connection.request(method, path, body=body.encode(), headers=headers)
        reply = connection.getresponse()
        return Reply(reply.status, reply.headers, reply.read().decode(errors="replace"))
    finally:
        connection.close()


def cookie_value(set_cookie: str) -> str:
    """The value a ``Set-Cookie`` line sets."""
    cookie: SimpleCookie = SimpleCookie(set_cookie)
    (morsel,) = cookie.values()
    return morsel.value


def sign_in(proxy: HttpsProxy, origin: str) -> tuple[Reply, Reply]:
    """The login page, then its form posted with its token from ``origin``: both replies."""
    page = https_request(proxy, "GET", "/accounts/login/")
    assert page.status == 200, f"HTTP {page.status}\n{page.body[:500]}"
    # Every form of a page (the language switch's too) carries the same token.
    token = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.body)[0]
    form = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token, "next": ""}
    posted = https_request(
        proxy,
        "POST",
        "/accounts/login/",
        urlencode(form),
        Cookie=f"csrftoken={cookie_value(page.cookie('csrftoken'))}",
        Origin=origin,
        Referer=f"{proxy.origin}/accounts/login/",
        **{"Content-Type": "application/x-www-form-urlencoded"},
    )
    return page, posted


def check_sign_in(proxy: HttpsProxy, server: DshwebServer) -> None:
    """A sign-in from the proxy's own origin: sent home, with ``Secure`` cookies and HSTS,
    and the session cookie opens the home page."""
    page, posted = sign_in(proxy, proxy.origin)
    assert posted.status == 302, f"HTTP {posted.status}\n{server.output(lines=10)}"
    assert posted.headers["Location"] == "/"
    session = posted.cookie("sessionid")
    assert "; Secure" in session and "; HttpOnly" in session, session
    assert "; Secure" in page.cookie("csrftoken"), page.cookie("csrftoken")
    assert page.headers["Strict-Transport-Security"] == "max-age=31536000"

    home = https_request(proxy, "GET", "/", Cookie=f"sessionid={cookie_value(session)}")
    assert home.status == 200, home.body[:500]
    assert "Sign out" in home.body


def check_foreign_form_refused(proxy: HttpsProxy) -> None:
    """The login form posted from another origin is refused, with the page that says so."""
    _, posted = sign_in(proxy, FOREIGN)
    assert posted.status == 403
    assert "Form refused" in posted.body and "Nothing was changed." in posted.body
