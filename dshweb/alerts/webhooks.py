"""Where an alert webhook may go, and the one POST an attempt makes.

Any signed-in person can name a webhook, so a webhook is never a way into the network
dshweb runs in. :func:`webhook_target` resolves the URL's host and refuses it unless every
address it resolves to is public (not loopback, private, link-local, unique-local,
multicast, reserved or unspecified, IPv4-mapped ones included), or the host is one staff
allowed by name (``DSHWEB_WEBHOOK_ALLOWED_HOSTS``, hosts as written in a URL). The form
checks it when a rule is saved and :func:`post` again at every attempt, and then connects
to the very address it checked (a name that resolves elsewhere a second later is not
followed). Redirects are not followed. One attempt has one deadline, however the
receiver trickles its answer; what the rule's owner is told is the class of what went
wrong (``HTTP 5xx``, ``timeout``, ``no HTTP answer``), never the receiver's own words.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from dshweb.core.said import say

SCHEMES = {"http": 80, "https": 443}
READ_AT_MOST = 1 << 16
"""Bytes of a receiver's answer read (and dropped)."""


class TargetRefused(Exception):
    """The URL may not be a webhook; the message says why, to its owner."""


class PostFailed(Exception):
    """The attempt failed; the message is the class of what went wrong."""


@dataclass(frozen=True, slots=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]
    """Every address the host resolved to, each checked."""


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is not None:
            ip = mapped
    return ip.is_global and not ip.is_multicast


def _parsed(url: str) -> tuple[SplitResult, str, str, int]:
    """``url`` split, its scheme, host (as a URL's ``hostname`` has it) and port, or
    :class:`TargetRefused`."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise TargetRefused(say("webhook-not-url")) from None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in SCHEMES or not host:
        raise TargetRefused(say("webhook-no-host"))
    return parts, scheme, host, port or SCHEMES[scheme]


def target_key(url: str) -> str:
    """The receiver ``url`` names, ``host:port`` as :func:`webhook_target` reads it, to
    count the attempts at it (resolving nothing: a name server that takes its time
    delays no one else's turn); ``url`` itself when it names none."""
    try:
        _, _, host, port = _parsed(url)
    except TargetRefused:
        return url
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def webhook_target(url: str, allowed: frozenset[str]) -> Target:
    """The checked target of ``url``, or :class:`TargetRefused` saying why not."""
    parts, scheme, host, port = _parsed(url)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise TargetRefused(say("webhook-unknown-host", host=host)) from None
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in found))
    if host not in allowed:
        internal = [a for a in addresses if not is_public(a)]
        if internal:
            raise TargetRefused(say("webhook-internal", host=host, address=internal[0]))
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, port, path, addresses)


def post(target: Target, body: bytes, headers: Mapping[str, str], *, timeout: float) -> None:
    """POST ``body`` to ``target`` within ``timeout`` seconds in all; :class:`PostFailed`
    unless it answered 2xx."""
    deadline = time.monotonic() + timeout
    held: list[socket.socket] = []
    expired = threading.Event()

    def expire() -> None:  # wakes a read the receiver keeps waiting
        expired.set()
        for sock in held:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        status = _exchange(target, body, headers, deadline, held)
    except (OSError, http.client.HTTPException, ValueError) as error:
        if expired.is_set() or isinstance(error, TimeoutError):
            raise PostFailed(say("post-timeout")) from error
        raise PostFailed(say("post-no-answer")) from error
    finally:
        timer.cancel()
        for sock in held:
            sock.close()
    if not 200 <= status < 300:
        code = "post-redirect" if 300 <= status < 400 else "post-status"
        raise PostFailed(say(code, status=status // 100))


def _exchange(
    target: Target,
    body: bytes,
    headers: Mapping[str, str],
    deadline: float,
    held: list[socket.socket],
) -> int:
    sock = _connect(target, deadline)
    held.append(sock)
    if target.scheme == "https":
        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=target.host)
        held.append(sock)
    connection = http.client.HTTPConnection(target.host, target.port)
    connection.sock = sock
    connection.request("POST", target.path, body=body, headers=dict(headers))
    answer = connection.getresponse()
    answer.read(READ_AT_MOST)
    return answer.status


def _connect(target: Target, deadline: float) -> socket.socket:
    failure: OSError = OSError("no address")
    for address in target.addresses:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        try:
            return socket.create_connection((address, target.port), timeout=left)
        except OSError as error:
            failure = error
    raise failure
