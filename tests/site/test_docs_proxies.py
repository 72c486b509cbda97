"""The the docs' nginx and Caddy examples, run as written in front of a real dshweb.

dshweb runs as ``scripts/start`` runs it behind a proxy (``DSHWEB_BEHIND_TLS_PROXY=1``);
the proxy is the real program with the docs' block
(:mod:`tests.support.docs_proxies`: only ports and certificate changed). Through it, as a
browser would: the sign-in form with its CSRF token and ``Origin``, the ``Secure``
cookies, HSTS, the plain-HTTP redirect, and the live socket over ``wss://`` with the
session cookie, which a page of another origin cannot open. A README block the test
cannot read fails it.
"""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from tests.support.docs_proxies import (
    Caddy,
    ExampleChanged,
    Nginx,
    ProxyError,
    ReverseProxy,
    readme_block,
    replace_once,
)
from tests.support.proxy_client import (
    FOREIGN,
    behind_a_proxy,
    check_foreign_form_refused,
    check_sign_in,
    cookie_value,
    https_request,
    sign_in,
)
from tests.support.server import HOST, DshwebServer, serving
from tests.support.tls_proxy import self_signed_certificate

TIMEOUT = 10.0


@pytest.fixture(scope="module")
def dshweb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    # As scripts/start runs it behind a proxy.
    yield from serving(behind_a_proxy(tmp_path_factory.mktemp("dshweb")))


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(Nginx, id="nginx", marks=pytest.mark.nginx),
        pytest.param(Caddy, id="caddy", marks=pytest.mark.caddy),
    ],
)
def proxy(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    dshweb: DshwebServer,
) -> Iterator[ReverseProxy]:
    kind: type[ReverseProxy] = request.param
    folder = tmp_path_factory.mktemp(kind.name)
    cert, key = self_signed_certificate(folder)
    proxy = kind(folder=folder, upstream_port=dshweb.port, cert=cert, key=key)
    try:
        proxy.start()
    except ProxyError as error:
        pytest.fail(str(error), pytrace=False)
    yield proxy
    proxy.stop()


def _session_cookie(proxy: ReverseProxy, dshweb: DshwebServer) -> str:
    _, posted = sign_in(proxy, proxy.origin)
    assert posted.status == 302, f"HTTP {posted.status}\n{dshweb.output(lines=10)}"
    return cookie_value(posted.cookie("sessionid"))


def test_sign_in_through_the_proxy(proxy: ReverseProxy, dshweb: DshwebServer) -> None:
    check_sign_in(proxy, dshweb)


def test_a_form_from_another_origin_is_refused(proxy: ReverseProxy) -> None:
    check_foreign_form_refused(proxy)


def test_plain_http_is_sent_to_https(proxy: ReverseProxy) -> None:
    connection = http.client.HTTPConnection(HOST, proxy.http_port, timeout=TIMEOUT)
    try:
        connection.request("GET", "/accounts/login/?next=/")
        reply = connection.getresponse()
    finally:
        connection.close()
    assert reply.status in (301, 308), reply.status
    # nginx's `$host` has no port (the example's 443); Caddy names its site's port.
    location = urlsplit(reply.headers["Location"])
    assert (location.scheme, location.hostname) == ("https", HOST), location
    assert location.port in (None, proxy.tls_port), location
    assert (location.path, location.query) == ("/accounts/login/", "next=/"), location


def test_the_live_socket_opens_through_the_proxy(proxy: ReverseProxy, dshweb: DshwebServer) -> None:
    session = _session_cookie(proxy, dshweb)
    with connect(
        f"wss://{HOST}:{proxy.tls_port}/ws/sessions/",
        ssl=proxy.client_context(),
        origin=Origin(proxy.origin),
        additional_headers={"Cookie": f"sessionid={session}"},
        open_timeout=TIMEOUT,
    ) as socket:
        first = socket.recv(timeout=TIMEOUT)
    assert isinstance(first, str)
    assert re.match(r'\s*<[a-z]+ [^>]*\bid="', first), first[:500]  # a fragment, by its id


def test_a_socket_from_another_origin_is_refused(proxy: ReverseProxy, dshweb: DshwebServer) -> None:
    session = _session_cookie(proxy, dshweb)
    with pytest.raises(InvalidStatus) as refused:
        connect(
            f"wss://{HOST}:{proxy.tls_port}/ws/sessions/",
            ssl=proxy.client_context(),
            origin=Origin(FOREIGN),
            additional_headers={"Cookie": f"sessionid={session}"},
            open_timeout=TIMEOUT,
        ).close()
    assert refused.value.response.status_code == 403
    assert "origin 'https://evil.example' is not this server's" in dshweb.output(lines=20)


def test_readiness_is_asked_through_the_proxy_and_by_caddy(
    proxy: ReverseProxy, dshweb: DshwebServer
) -> None:
    if isinstance(proxy, Caddy):
        # The example's health_uri: Caddy asks dshweb itself, over plain HTTP to 127.0.0.1,
        # past the host check and the redirect to HTTPS, while this test asks nothing.
        asked = dshweb.output().count('"GET /readyz" 200')
        deadline = time.monotonic() + TIMEOUT
        while dshweb.output().count('"GET /readyz" 200') == asked:
            assert time.monotonic() < deadline, dshweb.output(lines=20)
            time.sleep(0.1)
    # A monitor asks through the proxy (nginx's free version has no check of its own).
    reply = https_request(proxy, "GET", "/readyz", Host=f"{HOST}:{proxy.tls_port}")
    assert (reply.status, reply.body) == (200, "ready\n")
    assert reply.cookie("sessionid") == "" and reply.cookie("csrftoken") == ""


def test_an_example_the_test_cannot_read_is_an_error(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("```nginx\nserver { listen 8443 ssl; }\n```\n")
    block = readme_block("nginx", readme)
    with pytest.raises(ExampleChanged, match="0 matches"):
        replace_once(block, r"\blisten\s+443\b", "listen 1", example="nginx")
    readme.write_text(readme.read_text() * 2)
    with pytest.raises(ExampleChanged, match="2 ```nginx blocks"):
        readme_block("nginx", readme)
