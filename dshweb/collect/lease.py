"""Who collects a DSH home: a lease in the database (:class:`CollectorLease`), one per
home name and one per home folder (a path on one host), so two collectors never fold the
same home.

:func:`lease_take` takes it in one transaction (the rows locked with ``SELECT … FOR
UPDATE``; the unique name and folder settle two first takes at once), refusing with
:class:`LeaseRefused` while another process holds a lease on the same name or folder. A
lease is held while it is not released and its heartbeat is younger than
:data:`~dshweb.live.timing.STALE_AFTER_BEATS` of its holder's own heartbeat interval
(stored in the row, so every process judges it alike); a stale lease is taken over,
logged. The holder renews it with :func:`lease_renew`, which raises :class:`LeaseLost`
once another process has taken it over, and gives it back with :func:`lease_release`
(the row stays: it says when the home was last seen).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from dshweb.collect.models import CollectedSession, CollectorLease
from dshweb.core.errors import DshError
from dshweb.live import timing

log = logging.getLogger(__name__)

_TAKE_ATTEMPTS = 3


class LeaseRefused(DshError):
    """Another live collector holds the home's name or folder; the message says which."""


class LeaseLost(DshError):
    """Another collector took the lease over (this one was not heard from in time)."""


@dataclass(frozen=True, slots=True)
class Lease:
    """The lease this process holds."""

    name: str
    path: str
    token: str
    heartbeat_every: float


def lease_is_held(row: CollectorLease, now: datetime) -> bool:
    """Whether ``row``'s holder is alive, as far as the database can tell."""
    if row.released_at is not None:
        return False
    stale_after = timedelta(seconds=timing.STALE_AFTER_BEATS * row.heartbeat_every)
    return now - row.heartbeat_at <= stale_after


def lease_holder(row: CollectorLease, now: datetime) -> str:
    """One line saying who holds ``row`` and when it was last heard from."""
    age = max(0.0, (now - row.heartbeat_at).total_seconds())
    return (
        f"home {row.name} ({row.path}) is collected by {row.host}:{row.pid} "
        f"since {row.started_at:%Y-%m-%d %H:%M:%S} UTC, last seen {age:.0f} s ago"
    )


def lease_take(*, name: str, path: str, heartbeat_every: float) -> Lease:
    """The lease of home ``name`` at ``path`` for this process, or :class:`LeaseRefused`."""
    for attempt in range(_TAKE_ATTEMPTS):
        try:
            return _take(name, path, heartbeat_every)
        except IntegrityError:
            # Another process inserted the same name or path between our read and our
            # write: read again, and refuse if it is now held.
            if attempt == _TAKE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _take(name: str, path: str, heartbeat_every: float) -> Lease:
    token = secrets.token_hex(16)
    host = socket.gethostname()
    same_folder = Q(host=host, path=path)
    with transaction.atomic():
        rows = list(CollectorLease.objects.select_for_update().filter(Q(name=name) | same_folder))
        now = timezone.now()
        for row in rows:
            if lease_is_held(row, now):
                raise LeaseRefused(lease_holder(row, now))
        for row in rows:
            if row.released_at is None:
                log.warning("taking over a stale lease: %s", lease_holder(row, now))
        # Another name for the same folder: that home is this one now (its rows go too).
        renamed = CollectorLease.objects.filter(same_folder).exclude(name=name)
        CollectedSession.objects.filter(
            home__in=list(renamed.values_list("name", flat=True))
        ).delete()
        renamed.delete()
        CollectorLease.objects.update_or_create(
            name=name,
            defaults={
                "path": path,
                "host": host,
                "pid": os.getpid(),
                "token": token,
                "started_at": now,
                "heartbeat_at": now,
                "heartbeat_every": heartbeat_every,
                "released_at": None,
            },
        )
    return Lease(name, path, token, heartbeat_every)


def lease_renew(lease: Lease) -> None:
    """Say this process is alive; :class:`LeaseLost` when it no longer holds the lease."""
    renewed = CollectorLease.objects.filter(
        name=lease.name, token=lease.token, released_at__isnull=True
    ).update(heartbeat_at=timezone.now())
    if not renewed:
        raise LeaseLost(lease_lost_reason(lease))


def lease_lost_reason(lease: Lease) -> str:
    row = CollectorLease.objects.filter(name=lease.name).first()
    if row is None:
        return f"the lease of home {lease.name} was deleted"
    return f"the lease was taken over: {lease_holder(row, timezone.now())}"


def lease_release(lease: Lease) -> bool:
    """Give the lease back (if this process still holds it); the row stays, released."""
    now = timezone.now()
    return bool(
        CollectorLease.objects.filter(
            name=lease.name, token=lease.token, released_at__isnull=True
        ).update(heartbeat_at=now, released_at=now)
    )
