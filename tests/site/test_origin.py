"""The WebSocket origin check through the real ASGI application: only a page of this very
server (scheme, host and port) opens a socket, whatever cookies it carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dshweb.site.origin import origin_allowed, parse_origin, served_as
from tests.live.test_sockets import _connect, _receive, cookie, home, stop

pytestmark = [pytest.mark.django_db(transaction=True)]
__all__ = ["cookie", "home", "stop"]  # the fixtures of tests/live/test_sockets.py

SERVED = "127.0.0.1:8000"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("origin", "host"),
    [
        ("http://127.0.0.1:9999", SERVED),  # another port of the same machine
        ("https://127.0.0.1:8000", SERVED),  # another scheme
        ("http://localhost:8000", SERVED),  # another host name
        ("http://127.0.0.1", SERVED),  # the default port is another port
        ("http://127.0.0.1:8000.evil.example", SERVED),
        ("null", SERVED),  # a sandboxed page or a file
        ("http://evil.example:8000", "evil.example:8000"),  # a rebound DNS name
    ],
)
async def test_a_page_of_another_origin_gets_no_socket(
    home: Path, cookie: bytes, stop: None, origin: str, host: str
) -> None:
    communicator, connected, _ = await _connect(
        "/ws/sessions/", (b"origin", origin.encode()), (b"host", host.encode()), (b"cookie", cookie)
    )
    assert connected is False
    await communicator.disconnect()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("origin", "host"),
    [
        ("http://127.0.0.1:8000", SERVED),
        ("http://localhost:8000", "localhost:8000"),
        ("http://[::1]:8000", "[::1]:8000"),
        ("http://127.0.0.1", "127.0.0.1:80"),  # the default port, named or not
        ("HTTP://127.0.0.1:8000", SERVED),
    ],
)
async def test_a_page_of_this_server_gets_the_list(
    home: Path, cookie: bytes, stop: None, origin: str, host: str
) -> None:
    communicator, connected, _ = await _connect(
        "/ws/sessions/", (b"origin", origin.encode()), (b"host", host.encode()), (b"cookie", cookie)
    )
    assert connected is True
    assert 'id="row-local_2f_auto-compact"' in await _receive(communicator)
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_a_trusted_origin_opens_a_socket(
    home: Path, cookie: bytes, stop: None, settings: Any
) -> None:
    """A TLS proxy's public origin, from ``DSHWEB_TRUSTED_ORIGINS`` via CSRF_TRUSTED_ORIGINS."""
    settings.CSRF_TRUSTED_ORIGINS = ["https://dash.example.com"]
    for origin, accepted in [
        ("https://dash.example.com", True),
        ("http://dash.example.com", False),
        ("https://dash.example.com:8443", False),
    ]:
        communicator, connected, _ = await _connect(
            "/ws/sessions/", (b"origin", origin.encode()), (b"cookie", cookie)
        )
        assert connected is accepted, origin
        await communicator.disconnect()


def _scope(host: str, scheme: str = "ws", **extra: str) -> Any:
    headers = [(b"host", host.encode())] + [
        (name.encode(), value.encode()) for name, value in extra.items()
    ]
    return {"type": "websocket", "scheme": scheme, "headers": headers}


def test_the_origin_a_socket_is_served_as(settings: Any) -> None:
    hosts = ["127.0.0.1", "dash.example.com"]
    assert served_as(_scope("127.0.0.1:8000"), allowed_hosts=hosts) == "http://127.0.0.1:8000"
    assert served_as(_scope("dash.example.com", "wss"), allowed_hosts=hosts) == (
        "https://dash.example.com"
    )
    assert served_as(_scope("evil.example:8000"), allowed_hosts=hosts) is None
    no_host: Any = {"type": "websocket", "headers": []}
    assert served_as(no_host, allowed_hosts=hosts) is None
    proxied = _scope("dash.example.com", **{"x-forwarded-proto": "https"})
    assert served_as(proxied, allowed_hosts=hosts) == "http://dash.example.com"
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert served_as(proxied, allowed_hosts=hosts) == "https://dash.example.com"


@pytest.mark.parametrize(
    ("origin", "trusted", "allowed"),
    [
        ("https://a.example.com", ["https://*.example.com"], True),
        ("https://example.com", ["https://*.example.com"], True),
        ("http://a.example.com", ["https://*.example.com"], False),
        ("https://a.example.com:8443", ["https://*.example.com"], False),
        ("https://a.example.com", ["https://a.example.com:443"], True),
        ("https://evil-example.com", ["https://*.example.com"], False),
        (None, ["https://a.example.com"], False),
        ("http://user@127.0.0.1:8000", [], False),
        ("http://127.0.0.1:8000/page", [], False),
    ],
)
def test_trusted_origins(origin: str | None, trusted: list[str], allowed: bool) -> None:
    assert origin_allowed(origin, served_as="http://127.0.0.1:8000", trusted=trusted) is allowed


def test_parse_origin() -> None:
    assert parse_origin("http://127.0.0.1:8000") == ("http", "127.0.0.1", 8000)
    assert parse_origin("https://[::1]") == ("https", "::1", 443)
    assert parse_origin("http://127.0.0.1:99999") is None
    assert parse_origin("ftp://127.0.0.1") is None
    assert parse_origin("null") is None
