"""dshweb behind a TLS-terminating reverse proxy, for real: daphne in a child process as
``scripts/start`` runs it with ``DSHWEB_BEHIND_TLS_PROXY=1``, and a proxy on 127.0.0.1
(:mod:`tests.support.tls_proxy`) in front of it with a certificate made for the test. A person
signs in through ``https://`` with the form's CSRF token and the browser's ``Origin``.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from tests.support.proxy_client import (
    behind_a_proxy,
    check_foreign_form_refused,
    check_sign_in,
    cookie_value,
)
from tests.support.server import HOST, PASSWORD, USERNAME, DshwebServer, serving
from tests.support.tls_proxy import TlsProxy, self_signed_certificate


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    yield from serving(behind_a_proxy(tmp_path_factory.mktemp("https-proxy")))


@pytest.fixture(scope="module")
def proxy(server: DshwebServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsProxy]:
    cert, key = self_signed_certificate(tmp_path_factory.mktemp("https-proxy-cert"))
    tls = TlsProxy(upstream_port=server.port, cert=cert, key=key)
    tls.start()
    try:
        yield tls
    finally:
        tls.stop()


def test_sign_in_through_a_tls_proxy(proxy: TlsProxy, server: DshwebServer) -> None:
    check_sign_in(proxy, server)


def test_a_form_from_another_origin_is_still_refused(proxy: TlsProxy) -> None:
    check_foreign_form_refused(proxy)


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


# -- whose X-Forwarded-For counts ------------------------------------------------------

PROXY_ADDRESS = "127.0.0.2"
"""The proxy's own source address (nginx ``proxy_bind``), the one trusted below."""


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    folder = tmp_path_factory.mktemp("trusted-proxy")
    yield from serving(behind_a_proxy(folder, DSHWEB_TRUSTED_PROXIES=PROXY_ADDRESS))


def _sign_in_directly(
    server: DshwebServer, password: str, *, source: str, forwarded_for: str
) -> int:
    """A sign-in straight to daphne from ``source``, naming ``forwarded_for`` as the
    client, as a proxy would (or a client pretending to be one): the form's HTTP status."""
    headers = {
        "Host": f"{HOST}:{server.port}",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-For": forwarded_for,
    }

    def request(method: str, body: str = "", **more: str) -> tuple[int, str, str]:
        connection = http.client.HTTPConnection(
            HOST, server.port, timeout=30, source_address=(source, 0)
        )
        try:
            connection.request(method, "/accounts/login/", body=body, headers=headers | more)
            reply = connection.getresponse()
            cookie = (
                cookie_value(reply.headers.get("Set-Cookie", "csrftoken="))
                if method == "GET"
                else ""
            )
            return reply.status, reply.read().decode(errors="replace"), cookie
        finally:
            connection.close()

    status, page, cookie = request("GET")
    assert status == 200, page[:300]
    # Every form of a page (the language switch's too) carries the same token.
    token = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[0]
    form = {"username": USERNAME, "password": password, "csrfmiddlewaretoken": token}
    status, _, _ = request(
        "POST",
        urlencode(form),
        Cookie=f"csrftoken={cookie}",
        Origin=f"https://{HOST}:{server.port}",
        **{"Content-Type": "application/x-www-form-urlencoded"},
    )
    return status


def test_only_the_trusted_proxy_names_the_client_the_throttle_counts(
    guarded: DshwebServer,
) -> None:
    # A client on this host going around the proxy cannot pick a fresh address for each
    # try: its X-Forwarded-For is ignored, its own address counted.
    for n in range(5):  # DSHWEB["LOGIN_THROTTLE_FAILURES"]
        status = _sign_in_directly(
            guarded, "wrong", source=HOST, forwarded_for=f"198.51.100.{n + 1}"
        )
        assert status == 200
    assert _sign_in_directly(guarded, PASSWORD, source=HOST, forwarded_for="198.51.100.99") == 429

    # The trusted proxy's header names the client: a failing client is throttled, and
    # only that client.
    for _ in range(5):
        status = _sign_in_directly(
            guarded, "wrong", source=PROXY_ADDRESS, forwarded_for="203.0.113.7"
        )
        assert status == 200
    assert (
        _sign_in_directly(guarded, PASSWORD, source=PROXY_ADDRESS, forwarded_for="203.0.113.7")
        == 429
    )
    assert (
        _sign_in_directly(guarded, PASSWORD, source=PROXY_ADDRESS, forwarded_for="203.0.113.8")
        == 302
    )
