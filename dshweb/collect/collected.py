"""What collectors wrote, read back without a DSH home: for web workers that never fold.

:func:`collected_home` rebuilds a :class:`~dshweb.live.hub.HomeView` of one collected
home from its :class:`CollectedSession` rows (each opened with
:func:`~dshweb.core.fold.sealed.open_session`; a row this code cannot open is left out
and logged), with its collector's state from the lease: online while the lease is held,
else offline since its last heartbeat.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from dshweb.collect.lease import lease_is_held
from dshweb.collect.models import CollectedSession, CollectorLease
from dshweb.core.fold.progress import FoldProgress
from dshweb.core.fold.sealed import open_session
from dshweb.live.hub import HomeView, SessionView

log = logging.getLogger(__name__)


def sealing_key(secret_key: str | None = None) -> bytes:
    """The key collected sessions are signed with, derived from ``SECRET_KEY`` (every
    process of one dashboard shares it)."""
    secret = settings.SECRET_KEY if secret_key is None else secret_key
    return hashlib.sha256(b"dshweb.collected-session\0" + secret.encode()).digest()


@dataclass(frozen=True, slots=True)
class CollectedHome:
    """One collected home as the database has it."""

    name: str
    view: HomeView
    host: str
    pid: int
    started_at: datetime
    last_seen: datetime
    """The collector's last heartbeat (or its release)."""
    online: bool
    """A collector holds the home's lease now; otherwise the view is as of ``last_seen``."""
    unreadable: int = 0
    """Rows left out: written by other code or signed with another key."""


def collected_home(name: str) -> CollectedHome | None:
    """Home ``name`` as its collectors left it, or None when none ever collected it."""
    lease = CollectorLease.objects.filter(name=name).first()
    if lease is None:
        return None
    sessions, unreadable = open_rows(name, CollectedSession.objects.filter(home=name))
    count = len(sessions)
    view = HomeView(
        Path(lease.path),
        sessions,
        lease.error or None,
        FoldProgress(count, count, 0, 0, 0.0, done=True),
        lease.version,
        name,
    )
    return CollectedHome(
        name=name,
        view=view,
        host=lease.host,
        pid=lease.pid,
        started_at=lease.started_at,
        last_seen=lease.heartbeat_at,
        online=lease_is_held(lease, timezone.now()),
        unreadable=unreadable,
    )


def open_rows(
    name: str, rows: QuerySet[CollectedSession], key: bytes | None = None
) -> tuple[dict[str, SessionView], int]:
    """The sessions of home ``name``'s ``rows`` that this code can open (signed with
    ``key``, default :func:`sealing_key`), and how many it could not (logged)."""
    key = sealing_key() if key is None else key
    sessions: dict[str, SessionView] = {}
    unreadable = 0
    found = rows.values_list("session_id", "version", "blob")
    for session_id, version, blob in found.iterator(chunk_size=500):
        opened = open_session(bytes(blob), key=key)
        if opened is None:
            unreadable += 1
            continue
        snapshot, gauge = opened
        sessions[session_id] = SessionView(snapshot, gauge, version)
    if unreadable:
        log.warning("%d collected session(s) of home %s could not be read", unreadable, name)
    return sessions, unreadable


def collected_home_names() -> list[str]:
    """Every home some collector has collected, by name."""
    return list(CollectorLease.objects.order_by("name").values_list("name", flat=True))
