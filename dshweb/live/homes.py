"""Every DSH home a process shows, at one moment: what pages and sockets read.

The embedded server shows one home, its own hub's (:mod:`dshweb.live.service`); a web
worker shows every home collectors have written to the database
(:mod:`dshweb.collect.worker`). Either way a reader gets one :class:`Homes`, an immutable
value: each :class:`ShownHome` (its :class:`~dshweb.live.hub.HomeView`, and for a
collected home whether its collector runs), one session by home and id, and the sessions
list of them all. A session id is unique only within its home, so a session is always
looked up by both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from dshweb.core.fold.progress import FoldProgress
from dshweb.core.listing.pages import SessionList
from dshweb.live.hub import HomeView, SessionView


@dataclass(frozen=True, slots=True)
class ShownHome:
    """One home as a page shows it."""

    view: HomeView
    collected: bool = False
    """Read from what a collector wrote to the database, not folded in this process."""
    online: bool = True
    """Its collector holds the home's lease now (always, for this process's own home)."""
    last_seen: datetime | None = None
    """Its collector's last heartbeat (None: this process's own home)."""
    host: str = ""
    """The machine its collector runs on ("" for this process's own home)."""

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def offline(self) -> bool:
        """Collected, and its collector is not running: the view is as it last wrote it."""
        return self.collected and not self.online and self.last_seen is not None


@dataclass(frozen=True)
class Homes:
    """The homes shown, by name; ``error_when_empty`` says why there is none (a web worker
    whose database no collector has written to)."""

    shown: tuple[ShownHome, ...] = ()
    error_when_empty: str = ""

    @cached_property
    def _by_name(self) -> Mapping[str, ShownHome]:
        return {home.name: home for home in self.shown}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    @property
    def many(self) -> bool:
        """More than one home: pages name each session's home."""
        return len(self.shown) > 1

    @property
    def error(self) -> str | None:
        """Why no session can be shown at all: no home, or the only one cannot be read
        (with several, a home that cannot be read is named beside the others)."""
        if not self.shown:
            return self.error_when_empty or "no DSH home is shown"
        if len(self.shown) == 1:
            return self.shown[0].view.error
        return None

    def home(self, name: str) -> ShownHome | None:
        return self._by_name.get(name)

    def session(self, home: str, session_id: str) -> SessionView | None:
        shown = self._by_name.get(home)
        return shown.view.sessions.get(session_id) if shown is not None else None

    def holding(self, session_id: str) -> tuple[str, ...]:
        """The names of the homes that have a session ``session_id``."""
        return tuple(home.name for home in self.shown if session_id in home.view.sessions)

    @cached_property
    def listing(self) -> SessionList:
        """The sessions list of every home (one home's own, kept with its view)."""
        if len(self.shown) == 1:
            return self.shown[0].view.listing
        return SessionList(trees=[home.view.home_tree for home in self.shown])

    @cached_property
    def progress(self) -> FoldProgress:
        """The first read of every home, summed."""
        parts = [home.view.progress for home in self.shown]
        if len(parts) == 1:
            return parts[0]
        return FoldProgress(
            sum(p.sessions_done for p in parts),
            sum(p.sessions_total for p in parts),
            sum(p.bytes_done for p in parts),
            sum(p.bytes_total for p in parts),
            max((p.elapsed for p in parts), default=0.0),
            all(p.done for p in parts),
        )
