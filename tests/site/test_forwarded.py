"""Whose ``X-Forwarded-For`` names the client (:mod:`dshweb.site.forwarded`): only a
trusted proxy's, and only the entry it wrote last; the settings that say who is trusted."""

from __future__ import annotations

from typing import Any

import pytest

from dshweb.config import get_config
from dshweb.setting_errors import ConfigurationError
from dshweb.site.forwarded import forwarded_client

TRUSTED = frozenset({"127.0.0.2", "::1"})


def _scope(peer: str, *forwarded: str) -> Any:
    headers = [(b"x-forwarded-for", value.encode()) for value in forwarded]
    return {"type": "http", "client": (peer, 5555), "headers": [(b"host", b"x"), *headers]}


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("127.0.0.1", ["203.0.113.7"], ("127.0.0.1", 5555)),  # not a trusted proxy
        ("127.0.0.2", ["203.0.113.7"], ("203.0.113.7", 0)),
        ("127.0.0.2", ["10.9.9.9, 203.0.113.7"], ("203.0.113.7", 0)),  # the proxy's own entry
        ("127.0.0.2", ["10.9.9.9", "203.0.113.8"], ("203.0.113.8", 0)),  # two header lines
        ("::1", ["2001:DB8::0001"], ("2001:db8::1", 0)),  # one written form
        ("0:0:0:0:0:0:0:1", ["[2001:db8::2]"], ("2001:db8::2", 0)),
        ("127.0.0.2", ["not-an-address"], ("127.0.0.2", 5555)),  # nothing usable: the peer
        ("127.0.0.2", [], ("127.0.0.2", 5555)),
    ],
)
def test_only_a_trusted_proxy_names_the_client(
    peer: str, forwarded: list[str], client: tuple[str, int]
) -> None:
    assert forwarded_client(_scope(peer, *forwarded), TRUSTED) == client


def test_who_is_trusted(settings: Any) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "BEHIND_TLS_PROXY": False, "TRUSTED_PROXIES": None}
    assert get_config().trusted_proxies == frozenset()
    settings.DSHWEB = {**settings.DSHWEB, "BEHIND_TLS_PROXY": True}
    assert get_config().trusted_proxies == {"127.0.0.1", "::1"}  # the proxies of docs/https.md
    settings.DSHWEB = {**settings.DSHWEB, "TRUSTED_PROXIES": " 127.0.0.2 ,[::2],"}
    assert get_config().trusted_proxies == {"127.0.0.2", "::2"}
    settings.DSHWEB = {**settings.DSHWEB, "TRUSTED_PROXIES": "proxy.internal"}
    with pytest.raises(ConfigurationError, match=r"'proxy\.internal' is not an IP address"):
        get_config()
