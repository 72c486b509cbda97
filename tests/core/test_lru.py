"""The one LRU: its cap, its order of eviction, a value the caller refuses, and its counts
under threads."""

from __future__ import annotations

import threading
from functools import partial

import pytest

from dshweb.core.lru import LRU


def test_the_least_recently_used_goes_first_and_the_cap_holds() -> None:
    cache: LRU[str, int] = LRU(2)
    made: list[str] = []

    def make(key: str) -> int:
        made.append(key)
        return len(made)

    assert cache.get_or_make("a", lambda: make("a")) == 1
    assert cache.get_or_make("b", lambda: make("b")) == 2
    assert cache.get_or_make("a", lambda: make("a")) == 1  # kept: "b" is now the oldest
    assert cache.get_or_make("c", lambda: make("c")) == 3  # "b" goes
    assert len(cache) == 2
    assert cache.get_or_make("a", lambda: make("a")) == 1
    assert cache.get_or_make("b", lambda: make("b")) == 4  # made again
    assert made == ["a", "b", "c", "b"]
    assert (cache.hits, cache.misses) == (2, 4)


def test_a_value_put_again_is_the_newest() -> None:
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 3)  # "a" is now the newest: "b" goes next
    cache.put("c", 4)
    assert cache.get_or_make("a", lambda: 0) == 3
    assert cache.get_or_make("b", lambda: 0) == 0


def test_a_value_taken_out_is_no_longer_kept() -> None:
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.pop("a") == 1 and cache.pop("a") is None and len(cache) == 1
    cache.put("c", 3)  # room for it: "b" stays
    assert cache.get_or_make("b", lambda: 0) == 2


def test_a_refused_value_is_made_again_and_counted_a_miss() -> None:
    cache: LRU[str, tuple[int, str]] = LRU(4)
    cache.put("row", (1, "old"))
    assert cache.get_or_make("row", lambda: (2, "new"), lambda kept: kept[0] == 2) == (2, "new")
    assert cache.get_or_make("row", lambda: (3, "newer"), lambda kept: kept[0] == 2) == (
        2,
        "new",
    )
    assert (cache.hits, cache.misses) == (1, 1)


def test_none_is_a_value_like_any_other() -> None:
    # compaction/status keeps "no request" as None: it is not asked for again.
    cache: LRU[str, int | None] = LRU(1)
    asked: list[str] = []

    def no_request() -> None:
        asked.append("s")

    for _ in range(3):
        assert cache.get_or_make("s", no_request) is None
    assert asked == ["s"]


def test_clear_keeps_nothing_and_counts_from_zero() -> None:
    cache: LRU[int, int] = LRU(3)
    cache.get_or_make(1, lambda: 1)
    cache.get_or_make(1, lambda: 1)
    cache.clear()
    assert (len(cache), cache.hits, cache.misses) == (0, 0, 0)


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        LRU[int, int](0)


def test_threads_share_it_within_its_cap_and_count_every_lookup() -> None:
    cache: LRU[int, int] = LRU(8)
    start = threading.Barrier(4)

    def work(offset: int) -> None:
        start.wait()
        for n in range(2_000):
            key = (n + offset) % 16
            assert cache.get_or_make(key, partial(int, key * 10)) == key * 10

    threads = [threading.Thread(target=work, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 8
    assert cache.hits + cache.misses == 8_000
