"""How far a first round over a home has got: sessions and bytes folded of the total.

Used by the hub (a progress bar on the pages) and the CLI (a line on the terminal).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dshweb.core.log.home import LogFile


@dataclass(frozen=True, slots=True)
class FoldProgress:
    sessions_done: int = 0
    sessions_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    elapsed: float = 0.0
    done: bool = False

    @property
    def seconds_left(self) -> float | None:
        """At the pace so far (None before there is a pace)."""
        if self.done:
            return 0.0
        if self.bytes_done <= 0 or self.elapsed <= 0:
            return None
        return max(0.0, (self.bytes_total - self.bytes_done) * self.elapsed / self.bytes_done)

    @property
    def percent(self) -> int:
        if self.done:
            return 100
        if self.bytes_total <= 0:
            return 0
        return min(99, self.bytes_done * 100 // self.bytes_total)

    def line(self) -> str:
        """One line for a terminal."""
        left = self.seconds_left
        eta = f", about {left:.0f} s left" if left is not None and not self.done else ""
        return (
            f"read {self.sessions_done:,} of {self.sessions_total:,} sessions, "
            f"{self.bytes_done / 1e6:,.1f} of {self.bytes_total / 1e6:,.1f} MB{eta}"
        )


class ProgressCounter:
    """Counts a round over ``logs``; ``resumed`` is where each folder's fold already is
    (bytes a checkpoint saved reading again)."""

    def __init__(self, logs: Iterable[LogFile], resumed: Mapping[Path, int]) -> None:
        self._logs = list(logs)
        self._resumed = dict(resumed)
        self._started = time.monotonic()
        self.total = sum(_size(log.path) for log in self._logs)
        self._at = {log.session_dir: self._resumed.get(log.session_dir, 0) for log in self._logs}
        self._finished: set[Path] = set()
        self.bytes = sum(self._at.values())

    @property
    def sessions(self) -> int:
        """Sessions whose log is folded to its end."""
        return len(self._finished)

    def folded(self, folder: Path, offset: int, *, finished: bool = True) -> None:
        """One session looked at: its log is now folded up to ``offset``, and to its end
        unless it was read only in part (a slice of a big or expensive log)."""
        before = self._at.get(folder, 0)
        if offset > before:
            self.bytes += offset - before
            self._at[folder] = offset
        if finished:
            self._finished.add(folder)

    def now(self, *, done: bool = False) -> FoldProgress:
        count = len(self._logs)
        elapsed = time.monotonic() - self._started
        if done:
            return FoldProgress(count, count, self.total, self.total, elapsed, True)
        return FoldProgress(self.sessions, count, min(self.bytes, self.total), self.total, elapsed)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
