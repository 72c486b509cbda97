"""dshweb behind a TLS-terminating reverse proxy, for real: daphne in a child process as
``scripts/start`` runs it with ``DSHWEB_BEHIND_TLS_PROXY=1``, and a proxy on 127.0.0.1
(:mod:`tests.tls_proxy`) in front of it with a certificate made for the test. A person
signs in through ``https://`` with the form's CSRF token and the browser's ``Origin``.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest

from tests.browser.server import HOST, DshwebServer, serving
from tests.proxy_client import behind_a_proxy, check_foreign_form_refused, check_sign_in
from tests.tls_proxy import TlsProxy, self_signed_certificate


@pytest.fixture(
    scope="module",
    # As scripts/start runs daphne behind a proxy (the client's address from the proxy's
    # X-Forwarded-For), and as plain daphne: the settings alone must be enough.
    params=[["--proxy-headers"], []],
    ids=["scripts-start", "plain-daphne"],
)
def server(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[DshwebServer]:
    yield from serving(behind_a_proxy(tmp_path_factory.mktemp("https-proxy"), request.param))


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
