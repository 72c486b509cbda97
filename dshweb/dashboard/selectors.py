"""Sessions for the pages: one process-wide :class:`HomeIndex`, refreshed per request.

The index is built lazily for ``settings.DSH_HOME`` / ``settings.DSH_PROFILE`` and
rebuilt when either changes. ``HomeIndex.refresh()`` folds only what the logs gained
since the last call, so refreshing on every request stays cheap. The lock serialises
refreshes: the index's trackers are not safe to fold from two threads at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from dshweb.core.errors import DshError
from dshweb.core.index import HomeIndex
from dshweb.core.session import SessionSnapshot

_lock = threading.Lock()
_index: HomeIndex | None = None


@dataclass(frozen=True, slots=True)
class HomeReading:
    """Every session of the home now, or why the home could not be read."""

    home: Path
    snapshots: tuple[SessionSnapshot, ...]
    error: str | None = None


def home_reading() -> HomeReading:
    """Refresh the shared index and return every session, newest activity first."""
    global _index
    home = Path(settings.DSH_HOME)
    profile = str(settings.DSH_PROFILE)
    with _lock:
        if _index is None or _index.home != home or _index.profile != profile:
            _index = HomeIndex(home, profile=profile)
        try:
            _index.refresh()
        except (DshError, OSError) as error:
            return HomeReading(home, (), str(error))
        return HomeReading(home, tuple(_index.snapshots()))


def reset_home_index() -> None:
    """Forget the shared index (tests, or a changed home)."""
    global _index
    with _lock:
        _index = None


def session_snapshot(reading: HomeReading, *, session_id: str) -> SessionSnapshot | None:
    return next((s for s in reading.snapshots if s.session_id == session_id), None)
