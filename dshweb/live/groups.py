"""Channels group names: one for the sessions list, one per session of each home (home
and id hashed: a group name allows only a few ASCII characters and a session id may hold
anything)."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter

SESSIONS_GROUP = "dshweb.sessions"


def session_group(home: str, session_id: str) -> str:
    """The group of session ``session_id`` of home ``home`` (a home's name has no NUL)."""
    key = f"{home}\0{session_id}".encode("utf-8", "surrogatepass")
    return "dshweb.session." + hashlib.sha256(key).hexdigest()[:32]


class Subscriptions:
    """How many sockets of this process follow each group, so the publisher announces
    only what someone is watching (the in-memory channel layer lives in this process too)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, group: str) -> None:
        with self._lock:
            self._counts[group] += 1

    def remove(self, group: str) -> None:
        with self._lock:
            self._counts[group] -= 1
            if self._counts[group] <= 0:
                del self._counts[group]

    def watched(self, group: str) -> bool:
        with self._lock:
            return self._counts[group] > 0 if group in self._counts else False


subscriptions = Subscriptions()
