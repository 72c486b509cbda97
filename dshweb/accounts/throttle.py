"""Failed sign-ins are counted per username and client address, in Django's cache.

After ``DSHWEB["LOGIN_THROTTLE_FAILURES"]`` failures for one pair, each within
``DSHWEB["LOGIN_THROTTLE_SECONDS"]`` of the one before, the pair is refused — even with
the right password — until that many seconds have passed since the last failure. A
refused attempt is not a failure (it neither extends nor restarts the cool-off); a
successful sign-in clears the count. Other usernames, and the same username from another
address, are not affected.

The counts live in the default cache: local memory, so per server process and forgotten
on restart. The username is case-folded and hashed into the key (a cache holds no names);
the address is ``REMOTE_ADDR``, which daphne takes from ``X-Forwarded-For`` when started
with ``--proxy-headers`` (``scripts/start`` does behind a TLS proxy).
"""

from __future__ import annotations

import hashlib
import math
import time

from django.core.cache import cache

from dshweb.config import get_config

_PREFIX = "dshweb.login"


def login_cool_off_left(*, username: str, address: str) -> int:
    """Seconds until this username may try again from this address (0: it may now)."""
    until = cache.get(_key("until", username, address))
    if until is None:
        return 0
    return max(0, math.ceil(float(until) - time.time()))


def login_failed(*, username: str, address: str) -> None:
    config = get_config()
    window = config.login_throttle_seconds
    key = _key("failures", username, address)
    cache.add(key, 0, window)
    try:
        failures = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, failures := 1, window)
    cache.touch(key, window)  # the window runs from the latest failure
    if failures >= config.login_throttle_failures:
        cache.set(_key("until", username, address), time.time() + window, window)


def login_succeeded(*, username: str, address: str) -> None:
    cache.delete_many([_key(kind, username, address) for kind in ("failures", "until")])


def _key(kind: str, username: str, address: str) -> str:
    digest = hashlib.sha256(f"{username.casefold()}\0{address}".encode()).hexdigest()
    return f"{_PREFIX}.{kind}.{digest}"
