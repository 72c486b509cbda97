"""Whether this process is ready to serve: what ``/readyz`` answers
(:mod:`dshweb.site.health`) and what sends systemd ``READY=1`` (:mod:`dshweb.live.systemd`).

A process that reads its own home is ready once its hub has folded every log of the home
to its end since it started, or found the home unreadable (its pages then say why:
waiting would not change that); every process, a web worker too, once the database
answers a read of its tables and, for a team (``DSHWEB_REDIS_URL``), Redis answers a
ping. :func:`not_ready` gives the first reason it is not, one line of plain English for
a machine or an operator's log (not translated: no page shows it):

- ``folding the home: 12 of 5,000 sessions read`` (before the logs are counted, without
  the figures)
- ``the database does not answer``
- ``Redis does not answer``

The checks of the stores block, each within its store's connection timeout (PostgreSQL's
``connect_timeout``, :data:`REDIS_TIMEOUT`): run them in a thread. A change of answer is
logged once, with the error, never every probe.
"""

from __future__ import annotations

import logging
import threading

from django.db import DatabaseError, connections

from dshweb import environment
from dshweb.live import timing
from dshweb.live.hub import Hub
from dshweb.live.service import collecting, current_hub

log = logging.getLogger(__name__)

REDIS_TIMEOUT = 3.0
"""Seconds a ping of Redis may take (connecting included)."""
DATABASE_PROBE = "SELECT 1 FROM django_migrations LIMIT 1"
"""A read of a table every migrated database has: an empty database in its place (SQLite
makes one where its file went missing) does not answer it."""

DATABASE_OUT = "the database does not answer"
"""The reason a process whose database does not answer gives (a collector's too)."""

_said: dict[str, str | None] = {}
_said_lock = threading.Lock()


def hub_reason(hub: Hub) -> str | None:
    """Why ``hub``'s home is not folded through yet (None: it is, or cannot be read)."""
    if hub.read_through_at is not None:
        return None
    progress = hub.view().progress
    if not progress.sessions_total:  # the logs not counted yet
        return "folding the home"
    return (
        f"folding the home: {progress.sessions_done:,} of {progress.sessions_total:,} sessions read"
    )


def database_reason(alias: str = "default") -> str | None:
    """Why the database does not answer (None: it does); a connection of this thread's
    own, closed after, so each probe connects afresh."""
    connection = connections[alias]
    try:
        connection.close()  # a connection left open would answer for a file now gone
        with connection.cursor() as cursor:
            cursor.execute(DATABASE_PROBE)
            cursor.fetchall()
    except DatabaseError as error:
        return _said_once("database", DATABASE_OUT, error)
    finally:
        connection.close()
    return _said_once("database", None)


def redis_reason() -> str | None:
    """Why the team's Redis does not answer a ping (None: it does, or there is none)."""
    url = environment.store("DSHWEB_REDIS_URL")
    if not url:
        return None
    import redis

    try:
        client = redis.Redis.from_url(
            url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT
        )
        try:
            client.ping()
        finally:
            client.close()
    except redis.RedisError as error:
        return _said_once("redis", "Redis does not answer", error)
    return _said_once("redis", None)


def not_ready() -> str | None:
    """Why this process is not ready now (None: it is). Blocks: see the module."""
    if collecting() and (reason := hub_reason(current_hub())) is not None:
        return reason
    return database_reason() or redis_reason()


def starting() -> bool:
    """This process's home is still being folded through for the first time."""
    return collecting() and current_hub().read_through_at is None


def alive() -> bool:
    """This process's hub (if it has one) is at work (:meth:`~dshweb.live.hub.Hub.alive`)."""
    return not collecting() or current_hub().alive(timing.HUB_STALLED_AFTER)


def _said_once(store: str, reason: str | None, error: BaseException | None = None) -> str | None:
    """``reason``, logged when it differs from the last one said for ``store``."""
    with _said_lock:
        before = _said.get(store)
        _said[store] = reason
    if reason != before:
        if reason is not None:
            log.warning("not ready: %s (%s)", reason, " ".join(str(error).split()))
        elif before is not None:
            log.info("%s answers again", "the database" if store == "database" else "Redis")
    return reason
