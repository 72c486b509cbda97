"""A ``dsh web`` launch URL, read and checked without the client's HTTP stack (the
settings check one at every start: :mod:`dshweb.environment_server`), and the errors of
``dsh web``'s client (:mod:`dshweb.dsh_web.client`) that reading one raises."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from dshweb.core.errors import DshError
from dshweb.core.said import say


class DshWebError(DshError):
    """``dsh web`` could not be reached, or did not do what was asked."""


class LaunchUrlError(DshWebError, ValueError):
    """The launch URL is not a ``dsh web`` URL this client may use."""


@dataclass(frozen=True, slots=True)
class _Target:
    host: str
    port: int
    path: str
    token: str


def parse_launch_url(launch_url: str) -> _Target:
    """Split a launch URL; the messages name what is wrong, never the token."""
    try:
        parts = urlsplit(launch_url.strip())
        port = parts.port
    except ValueError as error:
        raise LaunchUrlError(say("url-malformed")) from error
    if parts.scheme != "http":
        raise LaunchUrlError(say("url-not-http", scheme=parts.scheme or "nothing"))
    host = parts.hostname or ""
    if not is_loopback(host):
        raise LaunchUrlError(say("url-not-loopback", host=repr(host)))
    tokens = parse_qs(parts.query).get("token", [])
    if len(tokens) != 1 or not tokens[0]:
        raise LaunchUrlError(say("url-no-token"))
    return _Target(host=host, port=port or 80, path=parts.path or "/", token=tokens[0])


def is_loopback(host: str) -> bool:
    """``host`` (a name, an address, or an IPv6 address in brackets) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
