"""How many sockets of this process follow each channel group, so the publisher announces
only what someone is watching (the in-memory channel layer lives in this process too)."""

from __future__ import annotations

import threading
from collections import Counter


class Subscriptions:
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
