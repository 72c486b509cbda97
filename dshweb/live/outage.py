"""When a shared store cannot be reached, and how to name it to a person.

The stores are the database and the channel layer. :func:`database_unreachable` says
whether an error from Django's database layer means the database could not be reached,
or the connection to it was lost: the server is down, restarting or refusing
connections, or the network between is. :func:`layer_unreachable` says the same of the
channel layer's Redis. That is an outage, which passes: pages answer 503, sockets close
with "store unavailable" and are opened again, collectors and publishers retry. Every
other error (a bad query, a constraint, a lock timeout, an SQLite file that cannot be
opened) is a fault of this program or its setup, and is never called an outage.
:func:`unreachable_store` names the store an error says is out, if any.

:func:`store_name` names the database by engine, name, host and port, :func:`layer_name`
the channel layer's Redis by host and port; never a user or password.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.db.utils import InterfaceError, OperationalError

# Connection exceptions (class 08), and the server shutting down, crashed or starting up,
# or out of connection slots: the server's own ways of saying "not now".
_CONNECTION_CLASS = "08"
_NOT_NOW = frozenset({"57P01", "57P02", "57P03", "53300"})


def database_unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the database could not be reached (or the connection broke)."""
    if not isinstance(error, OperationalError | InterfaceError):
        return False
    # Only a PostgreSQL connection imports the driver (a tenth of the server's start on
    # SQLite); without it loaded, no error can be one of its own.
    psycopg = sys.modules.get("psycopg")
    if psycopg is None:
        return False
    cause = error.__cause__
    if isinstance(cause, psycopg.OperationalError):
        # libpq's own failures (refused, reset, closed, timed out) carry no SQLSTATE.
        state = cause.sqlstate
        return state is None or state.startswith(_CONNECTION_CLASS) or state in _NOT_NOW
    if isinstance(cause, psycopg.InterfaceError):
        message = str(cause)  # "the connection is closed"; not a closed cursor
        return "connection" in message and "closed" in message
    return False


def layer_unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the channel layer's Redis could not be reached (or the
    connection to it broke)."""
    redis = sys.modules.get("redis")  # loaded by the Redis layer, when there is one
    if redis is None:
        return False
    return isinstance(error, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError)


def unreachable_store(error: BaseException) -> str | None:
    """The store ``error`` says cannot be reached, named (:func:`store_name`,
    :func:`layer_name`); None when it is no outage."""
    if database_unreachable(error):
        return store_name()
    if layer_unreachable(error):
        return layer_name()
    return None


def layer_name() -> str:
    """The channel layer's Redis as a person knows it, e.g. ``Redis at 10.0.0.5:6379``."""
    layer: dict[str, Any] = settings.CHANNEL_LAYERS.get("default", {})
    hosts = layer.get("CONFIG", {}).get("hosts") or [{}]
    address = urlsplit(str(hosts[0].get("address", "")))
    return f"Redis at {address.hostname or '?'}:{address.port or 6379}"


def store_name(alias: str = DEFAULT_DB_ALIAS) -> str:
    """The database of ``alias`` as a person knows it, e.g. ``PostgreSQL database dshweb at
    db.internal:5432`` (no user, no password)."""
    config = settings.DATABASES[alias]
    name = config.get("NAME") or "?"
    if "postgresql" in str(config.get("ENGINE", "")):
        host = config.get("HOST") or "localhost"
        port = config.get("PORT") or 5432
        return f"PostgreSQL database {name} at {host}:{port}"
    return f"database {name}"


def outage_reason(error: BaseException) -> str:
    """The first line of what the driver said, for a one-line log."""
    cause = error.__cause__ or error
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


class Outage:
    """One stretch of time a store could not be reached, as a background task lives
    through it: said once when it starts and once when it ends, never a traceback per try;
    the delay before each next try doubles from ``first`` up to ``most`` seconds."""

    def __init__(self, what: str, *, first: float, most: float, log: logging.Logger) -> None:
        self.what, self.first, self.most, self.log = what, first, most, log
        self.since: float | None = None
        self.store = ""
        self._delay = first

    @property
    def ongoing(self) -> bool:
        return self.since is not None

    def failed(self, error: BaseException) -> float:
        """Note a failed try; the seconds to wait before the next one."""
        if self.since is None:
            self.since = time.monotonic()
            self.store = unreachable_store(error) or store_name()
            self._delay = self.first
            self.log.warning(
                "%s: %s is unavailable (%s); retrying every %.0f s at most until it is back",
                self.what,
                self.store,
                outage_reason(error),
                self.most,
            )
        delay = self._delay
        self._delay = min(self.most, self._delay * 2)
        return delay

    def ended(self, done: str = "") -> None:
        """Note a try that worked (says so when it ends an outage)."""
        if self.since is None:
            return
        lasted = time.monotonic() - self.since
        self.since = None
        self.log.warning("%s: %s is back after %.0f s%s", self.what, self.store, lasted, done)
