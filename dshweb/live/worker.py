"""A web worker's home (``DSHWEB_COLLECT=off``): what a collector wrote, never the home itself.

:func:`worker_home` is the collected home this process shows (``DSHWEB["HOME_NAME"]``,
or the only one collected) as a :class:`WorkerHome`: its :class:`HomeView`, rebuilt from
the :class:`CollectedSession` rows, and whether its collector is online. Nothing is
folded and no file of a DSH home is opened.

The view is kept in the process and brought up to date by what changed, so a request
costs what changed, not the size of the home: each call reads the home's lease row (its
``version`` counts the collector's writes, and every row carries the version of the write
that made it). When the version moved, only the rows written since are read, and the rows
are counted; only when the count differs from what the process holds (sessions removed)
are the ids listed, to drop the gone ones. The lease version read first bounds what is
known, so a write landing between these queries is read again on the next call.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils import timezone

from dshweb.config import get_config
from dshweb.core.fold.progress import FoldProgress
from dshweb.live.collected import collected_home_names, open_rows
from dshweb.live.hub import HomeView, SessionView
from dshweb.live.lease import lease_is_held
from dshweb.live.models import CollectedSession, CollectorLease


@dataclass(frozen=True, slots=True)
class WorkerHome:
    """The collected home a web worker shows, as the database has it now."""

    name: str
    view: HomeView
    online: bool
    """A collector holds the home's lease now."""
    last_seen: datetime | None
    """Its collector's last heartbeat (None: no collector has collected it yet)."""


class HomeFollower:
    """One collected home, kept up to date by :meth:`refresh` (thread-safe)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reads = 0
        """Rows read with their blobs (instrumentation: tests check the cost)."""
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionView] = {}
        self._version = -1
        self._view: HomeView | None = None
        self._error_key: tuple[str, str] = ("", "")

    def refresh(self) -> WorkerHome:
        with self._lock:
            lease = CollectorLease.objects.filter(name=self.name).first()
            if lease is None:
                return self._never_collected()
            if lease.version < self._version:  # the rows were made again from nothing
                self._sessions, self._version = {}, -1
            if lease.version != self._version:
                self._read_since(self._version)
                self._version = lease.version
                self._view = None
            if self._view is None or self._error_key != (lease.error, lease.path):
                self._error_key = (lease.error, lease.path)
                count = len(self._sessions)
                self._view = HomeView(
                    Path(lease.path),
                    dict(self._sessions),
                    lease.error or None,
                    FoldProgress(count, count, 0, 0, 0.0, done=True),
                    lease.version,
                )
            view = self._view
        return WorkerHome(
            name=self.name,
            view=view,
            online=lease_is_held(lease, timezone.now()),
            last_seen=lease.heartbeat_at,
        )

    def _read_since(self, version: int) -> None:
        rows = CollectedSession.objects.filter(home=self.name)
        changed, _ = open_rows(self.name, rows.filter(version__gt=version))
        self.reads += len(changed)
        self._sessions.update(changed)
        if rows.count() != len(self._sessions):  # removed (or unreadable) rows
            kept = set(rows.values_list("session_id", flat=True))
            self._sessions = {s: v for s, v in self._sessions.items() if s in kept}

    def _never_collected(self) -> WorkerHome:
        self._sessions, self._version, self._view = {}, -1, None
        error = (
            f"no collector has collected the home {self.name!r} into this database yet; "
            f"start one with: manage.py dshweb_collect --home DIR --name {self.name}"
        )
        return WorkerHome(self.name, HomeView(Path(self.name), error=error), False, None)


_guard = threading.Lock()
_follower: HomeFollower | None = None


def worker_home() -> WorkerHome:
    """The collected home this web worker shows, up to date (one small query when nothing
    changed). Without a name to show, a home whose error says what to set."""
    global _follower
    follower = _follower
    if follower is None:
        name, problem = _shown_name()
        if name is None:
            return WorkerHome("", HomeView(Path("."), error=problem), False, None)
        with _guard:
            if _follower is None or _follower.name != name:
                _follower = HomeFollower(name)
            follower = _follower
    return follower.refresh()


def _shown_name() -> tuple[str | None, str]:
    if configured := get_config().home_name:
        return configured, ""
    names = collected_home_names()
    if len(names) == 1:
        return names[0], ""
    if not names:
        return None, (
            "no collector has written to this database yet: start one with "
            "manage.py dshweb_collect --home DIR --name NAME"
        )
    return None, (
        f"{len(names)} homes are collected here ({', '.join(names)}): set DSHWEB_HOME_NAME "
        "to the one this web worker shows"
    )


def forget_worker_home() -> None:
    """Drop the kept view (tests; a change of ``DSHWEB``)."""
    global _follower
    with _guard:
        _follower = None


@receiver(setting_changed, dispatch_uid="dshweb-live-worker")
def _forget_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting == "DSHWEB":
        forget_worker_home()
