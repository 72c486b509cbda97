"""The one small LRU every cache of dshweb is: at most :attr:`LRU.cap` entries, the least
recently used dropped first, safe to share between threads.

A value is made outside the lock (rendering a template can take milliseconds): two
threads that miss the same key both make it and the later one is kept. A kept value can
be refused by the caller (``valid``: made from an older snapshot, in an older minute),
which counts as a miss. Each cache names its cap beside it, and docs/using.md (Limits)
lists them all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """Up to ``cap`` values by key, with the count of lookups that found one (``hits``)
    and of those that made one (``misses``)."""

    __slots__ = ("_entries", "_lock", "cap", "hits", "misses")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"an LRU keeps at least one value, not {cap}")
        self.cap = cap
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(
        self, key: K, make: Callable[[], V], valid: Callable[[V], bool] | None = None
    ) -> V:
        """The value kept for ``key`` (and ``valid`` for it), now the most recently used;
        else ``make()``, kept."""
        with self._lock:
            try:
                kept = self._entries[key]
            except KeyError:
                pass
            else:
                if valid is None or valid(kept):
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return kept
            self.misses += 1
        value = make()
        self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key`` as the most recently used (the least recently used
        one goes when the cache is full)."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.cap:
                self._entries.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """The value kept for ``key``, no longer kept (``None``: none was, for a cache
        whose values are never ``None``)."""
        with self._lock:
            return self._entries.pop(key, None)

    def clear(self) -> None:
        """Keep nothing (and count from zero)."""
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)
