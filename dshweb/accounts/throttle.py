"""Failed sign-ins are counted per username and client address, and per address, in
Django's cache.

After ``DSHWEB["LOGIN_THROTTLE_FAILURES"]`` failures for one pair, each within
``DSHWEB["LOGIN_THROTTLE_SECONDS"]`` of the one before, the pair is refused — even with
the right password — until that many seconds have passed since the last failure. The
same holds for an address after ``DSHWEB["LOGIN_THROTTLE_ADDRESS_FAILURES"]`` failures
whatever the usernames, so trying one password on many names costs as much as many on
one. A refused attempt is not a failure (it neither extends nor restarts the cool-off); a
successful sign-in clears its pair's count (not the address's). Other usernames, and the
same username from another address, are not affected by a pair's count.

The counts live in the default cache: local memory, so per server process and forgotten
on restart, or Redis. The username is case-folded and hashed into the key (a cache holds
no names); the address is ``REMOTE_ADDR``, the peer's own or, from a trusted proxy, the
one its ``X-Forwarded-For`` names (:mod:`dshweb.site.forwarded`).
"""

from __future__ import annotations

import hashlib
import math
import time

from django.core.cache import cache

from dshweb.config import get_config

_PREFIX = "dshweb.login"


_ANY_USER = None
"""The username of an address's own count, whatever the names tried."""


def login_cool_off_left(*, username: str, address: str) -> int:
    """Seconds until this username may try again from this address (0: it may now)."""
    found = cache.get_many([_key("until", name, address) for name in (username, _ANY_USER)])
    if not found:
        return 0
    return max(0, math.ceil(max(float(until) for until in found.values()) - time.time()))


def login_failed(*, username: str, address: str) -> None:
    config = get_config()
    _count(username, address, config.login_throttle_failures, config.login_throttle_seconds)
    _count(
        _ANY_USER, address, config.login_throttle_address_failures, config.login_throttle_seconds
    )


def _count(username: str | None, address: str, most: int, window: int) -> None:
    key = _key("failures", username, address)
    cache.add(key, 0, window)
    try:
        failures = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, failures := 1, window)
    cache.touch(key, window)  # the window runs from the latest failure
    if failures >= most:
        cache.set(_key("until", username, address), time.time() + window, window)


def login_succeeded(*, username: str, address: str) -> None:
    cache.delete_many([_key(kind, username, address) for kind in ("failures", "until")])


def _key(kind: str, username: str | None, address: str) -> str:
    if username is None:
        return f"{_PREFIX}.{kind}.address.{hashlib.sha256(address.encode()).hexdigest()}"
    digest = hashlib.sha256(f"{username.casefold()}\0{address}".encode()).hexdigest()
    return f"{_PREFIX}.{kind}.{digest}"
