"""One writer at a time per patch file: the compare-and-swap holds under concurrent saves.

:func:`patch_file_lock` serialises writers of one file within this process (a lock per
path) and across processes (``flock`` on the file's folder, released when its
descriptor closes, so a crashed writer never leaves it held). Readers take no lock.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()


@contextmanager
def patch_file_lock(path: Path) -> Iterator[None]:
    """Hold the write lock of ``path`` (its folder must exist)."""
    key = os.path.abspath(path)
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        folder = os.open(os.path.dirname(key), os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            yield
        finally:
            os.close(folder)
