"""The process's one view of the DSH home, shared by the pages, the sockets and the watcher.

:class:`SharedHome` holds one :class:`HomeIndex` for ``settings.DSH_HOME`` /
``settings.DSH_PROFILE`` (rebuilt when either changes) behind a lock: trackers must not
be folded from two threads at once. Pages refresh it on each request (cheap: only what
the logs gained is folded); the live watcher refreshes the folders it is told changed.
Readings go through the index so each session's band keeps its hysteresis.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from dshweb.core.display import ContextReading
from dshweb.core.errors import DshError
from dshweb.core.index import HomeIndex
from dshweb.core.listing import SessionEntry, session_tree
from dshweb.core.session import SessionSnapshot


@dataclass(frozen=True, slots=True)
class HomeReading:
    """Every session of the home now, or why the home could not be read."""

    home: Path
    snapshots: tuple[SessionSnapshot, ...]
    readings: dict[str, ContextReading] = field(default_factory=dict)
    error: str | None = None

    def entries(self) -> list[SessionEntry]:
        """The sessions list, sub-agents under their parents."""
        return session_tree(self.snapshots, lambda s: self.readings[s.session_id])

    def session(self, session_id: str) -> SessionSnapshot | None:
        return next((s for s in self.snapshots if s.session_id == session_id), None)


class SharedHome:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._index: HomeIndex | None = None

    def index(self) -> HomeIndex:
        """The index for the configured home; call with ``lock`` held."""
        home, profile = Path(settings.DSH_HOME), str(settings.DSH_PROFILE)
        if self._index is None or self._index.home != home or self._index.profile != profile:
            self._index = HomeIndex(home, profile=profile)
        return self._index

    def read(self, changed: Iterable[Path] | None = None) -> HomeReading:
        """Fold what the logs gained (all of them, or the ``changed`` paths) and read."""
        with self.lock:
            index = self.index()
            try:
                index.refresh(changed)
            except (DshError, OSError) as error:
                return HomeReading(index.home, (), error=str(error))
            shots = tuple(index.snapshots())
            readings = {s.session_id: index.reading_of(s) for s in shots}
            return HomeReading(index.home, shots, readings)

    def reset(self) -> None:
        """Forget the index (tests, or a changed home)."""
        with self.lock:
            self._index = None


shared_home = SharedHome()


def home_reading() -> HomeReading:
    """Refresh the shared index and return every session, newest activity first."""
    return shared_home.read()


def reset_home_index() -> None:
    shared_home.reset()
