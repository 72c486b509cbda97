"""The client's address behind a reverse proxy: ``X-Forwarded-For`` believed only from a
trusted proxy.

Behind a proxy every request comes from the proxy's address; the proxy names the client
in ``X-Forwarded-For``. Anyone else who can reach dshweb's port can send that header too,
so :class:`ForwardedClient` takes it only when the request's peer is one of
``DSHWEB["TRUSTED_PROXIES"]`` (:attr:`dshweb.config.DshwebConfig.trusted_proxies`), and
only its last entry — the address the proxy itself appended or wrote. Any other request
keeps its peer's address. Django's ``REMOTE_ADDR`` (what the sign-in throttle counts) and
a socket's ``scope["client"]`` follow.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from asgiref.typing import ASGI3Application, ASGIReceiveCallable, ASGISendCallable, Scope

from dshweb.config import get_config


def forwarded_client(scope: Mapping[str, Any], trusted: frozenset[str]) -> tuple[str, int] | None:
    """The client of an HTTP or WebSocket ``scope``: its peer, or what a trusted peer's
    ``X-Forwarded-For`` names last (port 0: the proxy does not say)."""
    peer: tuple[str, int] | None = scope.get("client")
    if peer is None or _canonical(str(peer[0])) not in trusted:
        return peer
    named = [
        value.decode("latin-1")
        for name, value in scope.get("headers", ())
        if name.lower() == b"x-forwarded-for"
    ]
    last = ",".join(named).rsplit(",", 1)[-1].strip() if named else ""
    address = _canonical(last)
    return (address, 0) if address else peer


def _canonical(text: str) -> str:
    """``text`` as an IP address in its one written form, or ``""``."""
    try:
        return str(ipaddress.ip_address(text.strip().strip("[]")))
    except ValueError:
        return ""


class ForwardedClient:
    """ASGI middleware: the scope's ``client`` from a trusted proxy's header."""

    def __init__(self, inner: ASGI3Application) -> None:
        self.inner = inner

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] in ("http", "websocket"):
            trusted = get_config().trusted_proxies
            if trusted:
                scope = {**scope, "client": forwarded_client(scope, trusted)}  # type: ignore[assignment]
        await self.inner(scope, receive, send)
