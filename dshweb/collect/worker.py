"""A web worker's homes (``DSHWEB_COLLECT=off``): what collectors wrote, never a home itself.

:func:`worker_homes` is every home some collector has written to the database, as
:class:`~dshweb.live.homes.Homes`: each one's :class:`HomeView`, rebuilt from its
:class:`CollectedSession` rows, and whether its collector is online. Nothing is folded
and no file of a DSH home is opened.

Each home's view is kept in the process and brought up to date by what changed, so a
request costs what changed, not the size of the homes: each call reads the lease rows
(one per home; a lease's ``version`` counts its collector's writes, and every row carries
the version of the write that made it). When a version moved, only that home's rows
written since are read, and its rows are counted; only when the count differs from what
the process holds (sessions removed) are the ids listed, to drop the gone ones. The lease
version read first bounds what is known, so a write landing between these queries is
read again on the next call.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils import timezone

from dshweb.collect.collected import open_rows
from dshweb.collect.lease import lease_is_held
from dshweb.collect.models import CollectedSession, CollectorLease
from dshweb.core.fold.progress import FoldProgress
from dshweb.live.homes import Homes, ShownHome
from dshweb.live.hub import HomeView, SessionView, view_basis

NOTHING_COLLECTED = (
    "no collector has written to this database yet: start one with "
    "manage.py dshweb_collect --home DIR --name NAME"
)


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

    def refresh(self, lease: CollectorLease) -> ShownHome:
        """The home as the database has it, ``lease`` being its lease row read just now."""
        with self._lock:
            if lease.version < self._version:  # the rows were made again from nothing
                self._sessions, self._version = {}, -1
            previous, touched = self._view, set[str]()
            if lease.version != self._version:
                first = self._version < 0
                touched = self._read_since(self._version)
                self._version = lease.version
                self._view = None
                if first:
                    # A home's sessions live as long as the process: keep the garbage
                    # collector from walking them again and again (idle CPU grew with them).
                    gc.freeze()
            if self._view is None or self._error_key != (lease.error, lease.path):
                self._error_key = (lease.error, lease.path)
                count = len(self._sessions)
                self._view = HomeView(
                    Path(lease.path),
                    dict(self._sessions),
                    lease.error or None,
                    FoldProgress(count, count, 0, 0, 0.0, done=True),
                    lease.version,
                    self.name,
                    view_basis(previous, touched) if previous is not None else None,
                )
            view = self._view
        return ShownHome(
            view,
            collected=True,
            online=lease_is_held(lease, timezone.now()),
            last_seen=lease.heartbeat_at,
            host=lease.host,
        )

    def session(self, session_id: str, version: int) -> SessionView | None:
        """Session ``session_id`` as of home version ``version`` or later: the one held, or
        its row read now (None: it is gone). A row read here is newer than every refresh
        (its version is past the last one's), so the next refresh reads it again and
        counts it changed."""
        with self._lock:
            held = self._sessions.get(session_id)
            if held is not None and held.version >= version:
                return held
        row = CollectedSession.objects.filter(home=self.name, session_id=session_id)
        opened, _ = open_rows(self.name, row)
        self.reads += len(opened)
        with self._lock:
            now = opened.get(session_id)
            held = self._sessions.get(session_id)
            if now is None or (held is not None and held.version >= now.version):
                return held if now is not None else None
            self._sessions[session_id] = now
            return now

    def _read_since(self, version: int) -> set[str]:
        """Read the rows written after ``version``; the sessions changed, added or gone."""
        rows = CollectedSession.objects.filter(home=self.name)
        changed, _ = open_rows(self.name, rows.filter(version__gt=version))
        self.reads += len(changed)
        self._sessions.update(changed)
        touched = set(changed)
        if rows.count() != len(self._sessions):  # removed (or unreadable) rows
            kept = set(rows.values_list("session_id", flat=True))
            touched |= self._sessions.keys() - kept
            self._sessions = {s: v for s, v in self._sessions.items() if s in kept}
        return touched


_guard = threading.Lock()
_followers: dict[str, HomeFollower] = {}
_shown: tuple[tuple[object, ...], Homes] | None = None


def worker_homes(fresh: Mapping[str, int] | None = None) -> Homes:
    """Every collected home, up to date: one query for the leases, and for each home
    whose collector wrote since, the rows it wrote (a request costs what changed).

    ``fresh`` maps homes to versions an announcement said show a change (a socket's
    push): when what this process keeps shows them already (another socket's push read
    them first), it is the answer, without a query.
    """
    global _shown
    kept = _shown
    if kept is not None and fresh and _shows(kept[1], fresh):
        return kept[1]
    leases = list(CollectorLease.objects.order_by("name"))
    if not leases:
        return Homes(error_when_empty=NOTHING_COLLECTED)
    with _guard:
        for gone in set(_followers) - {lease.name for lease in leases}:
            del _followers[gone]
        followers = [
            _followers.setdefault(lease.name, HomeFollower(lease.name)) for lease in leases
        ]
    shown = tuple(
        follower.refresh(lease) for follower, lease in zip(followers, leases, strict=True)
    )
    # The same views and collector states: the same Homes, and the sessions list it keeps.
    key = tuple((id(h.view), h.online, None if h.online else h.last_seen) for h in shown)
    kept = _shown
    if kept is not None and kept[0] == key:
        return kept[1]
    homes = Homes(shown)
    _shown = (key, homes)
    return homes


def worker_session(home: str, session_id: str, version: int | None = None) -> SessionView | None:
    """One session of collected home ``home``: once the home has been read, a session
    whose announcement names ``version`` costs one row, whatever else the home wrote."""
    follower = _followers.get(home)
    if follower is None or version is None:
        fresh = {home: version} if version is not None else None
        return worker_homes(fresh).session(home, session_id)
    return follower.session(session_id, version)


def _shows(homes: Homes, fresh: Mapping[str, int]) -> bool:
    for name, version in fresh.items():
        shown = homes.home(name)
        if shown is None or shown.view.version < version:
            return False
    return True


def worker_follower(name: str) -> HomeFollower | None:
    """The follower of collected home ``name``, once a request has read it (tests)."""
    return _followers.get(name)


def forget_worker_homes() -> None:
    """Drop what is kept (tests; a change of ``DSHWEB``)."""
    global _shown
    with _guard:
        _followers.clear()
        _shown = None


@receiver(setting_changed, dispatch_uid="dshweb-live-worker")
def _forget_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting == "DSHWEB":
        forget_worker_homes()
