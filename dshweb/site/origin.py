"""The WebSocket origin check: a socket opens only from a page of this very server.

A browser sends a WebSocket handshake with the cookies of the socket's host whatever
page opened it, and cookies ignore the port: a page on ``http://127.0.0.1:9999`` that
opens ``ws://127.0.0.1:8000/ws/sessions/`` carries the user's login. Only the
handshake's ``Origin`` header (scheme, host and port of the page) tells dshweb's own
pages from any other, so it must match exactly one of:

- the origin the socket itself was served as: its ``Host`` header (an allowed host, so
  a rebound DNS name is not this server) with the socket's scheme (``http`` for
  ``ws``, ``https`` for ``wss`` or when ``SECURE_PROXY_SSL_HEADER`` says the proxy
  received HTTPS), as Django's CSRF check compares a form's origin;
- an origin of ``CSRF_TRUSTED_ORIGINS`` (``https://*.example.com`` matches subdomains,
  as in Django).

Scheme, host and port must all be equal (a missing port is the scheme's default); a
handshake without an origin, or with one that does not parse, is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, Scope
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

log = logging.getLogger(__name__)

DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]
"""Scheme, host name (lower case, IPv6 without brackets) and port."""


def parse_origin(text: str) -> Origin | None:
    """``scheme://host[:port]`` as an :data:`Origin`; None for anything else ("null")."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def origin_allowed(origin: str | None, *, served_as: str | None, trusted: Sequence[str]) -> bool:
    """Whether a page of ``origin`` may open a socket served as ``served_as``.

    ``served_as`` is the server's own origin as this socket reached it (None when its
    host is not allowed); ``trusted`` is ``CSRF_TRUSTED_ORIGINS``.
    """
    if origin is None:
        return False
    parsed = parse_origin(origin)
    if parsed is None:
        return False
    own = parse_origin(served_as) if served_as is not None else None
    return parsed == own or any(_trusts(pattern, origin, parsed) for pattern in trusted)


def _trusts(pattern: str, origin: str, parsed: Origin) -> bool:
    if "*" in pattern:  # Django's rule: scheme equal, netloc a subdomain of the pattern's
        scheme, _, netloc = pattern.partition("://")
        return scheme.lower() == parsed[0] and is_same_domain(
            urlsplit(origin.strip()).netloc.lower(), netloc.lstrip("*").lower()
        )
    return parse_origin(pattern) == parsed


def served_as(scope: Scope, *, allowed_hosts: Sequence[str]) -> str | None:
    """The origin a page of this server has when it opens this socket, or None."""
    headers = _headers(scope)
    host = headers.get("host")
    if not host:
        return None
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, allowed_hosts):
        return None
    secure = scope.get("scheme") == "wss"
    proxy: tuple[str, str] | None = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy is not None:
        name, value = proxy
        sent = headers.get(name.removeprefix("HTTP_").replace("_", "-").lower(), "")
        secure = secure or sent.split(",", 1)[0].strip() == value
    return f"{'https' if secure else 'http'}://{host}"


def _headers(scope: Scope) -> dict[str, str]:
    pairs: Iterable[tuple[bytes, bytes]] = scope.get("headers", ())  # type: ignore[assignment]
    return {name.decode("latin1").lower(): value.decode("latin1") for name, value in pairs}


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:  # Django's own fallback in debug mode
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


class SameOriginValidator:
    """ASGI middleware: a WebSocket whose page is not of this server is refused (403)."""

    def __init__(self, application: Any) -> None:
        self.application = application  # Channels' own middleware stack, untyped

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "websocket":
            own = served_as(scope, allowed_hosts=_allowed_hosts())
            origin = _headers(scope).get("origin")
            trusted = list(getattr(settings, "CSRF_TRUSTED_ORIGINS", ()))
            if not origin_allowed(origin, served_as=own, trusted=trusted):
                log.warning(
                    "WebSocket %s refused: its page's origin %r is not this server's (%s)%s",
                    scope.get("path", "?"),
                    origin,
                    own or "host not allowed",
                    "" if trusted else "; add a proxy's public origin to DSHWEB_TRUSTED_ORIGINS",
                )
                await WebsocketDenier()(scope, receive, send)  # type: ignore[arg-type]
                return
        await self.application(scope, receive, send)
