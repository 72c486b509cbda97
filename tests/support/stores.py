"""The shared stores the suite may run on: PostgreSQL (``DATABASE_URL``) and Redis.

The whole suite runs on SQLite by default and on PostgreSQL when ``DATABASE_URL`` names
one (``scripts/test --postgres``). pytest-django makes the in-process test database; a
dshweb the tests start as a child process gets a database of its own from
:func:`database_env`, made on first use and dropped when the test process ends, as on
SQLite it gets a ``db.sqlite3`` in its own data folder.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

POSTGRES_URL = (
    os.environ.get("DSHWEB_TEST_POSTGRES_URL") or "postgres://postgres@127.0.0.1:5432/postgres"
)
"""The PostgreSQL the ``services`` tests use (the server's maintenance database)."""


def _worker_database(url: str) -> str:
    """The Redis database of this test process: the URL's own, or with ``pytest -n`` one
    below it per worker (gw0 the URL's, gw1 the one below…), so tests running at once
    never flush each other's channel groups."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return url
    parts = urlsplit(url)
    number = int(parts.path.strip("/") or 0) - int(worker.removeprefix("gw"))
    if number < 0:
        raise RuntimeError(f"no Redis database left for worker {worker} below {url}")
    return urlunsplit(parts._replace(path=f"/{number}"))


REDIS_URL = _worker_database(os.environ.get("DSHWEB_TEST_REDIS_URL") or "redis://127.0.0.1:6379/15")
"""The Redis the ``services`` tests use (a database number of its own, flushed by them)."""

_made: set[str] = set()


def database_env(data_dir: Path) -> dict[str, str]:
    """``DATABASE_URL`` for a child dshweb whose data folder is ``data_dir``: on a
    PostgreSQL run, an empty database of its own (the same one for the same folder); on
    SQLite, nothing (it keeps ``db.sqlite3`` in ``data_dir``)."""
    base = os.environ.get("DATABASE_URL", "")
    if not base:
        return {}
    name = "dshweb_t_" + hashlib.sha256(str(data_dir).encode()).hexdigest()[:16]
    url = urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
    if url not in _made:
        create_database(base, name)
        _made.add(url)
        atexit.register(drop_database, base, name)
    return {"DATABASE_URL": url}


def create_database(server_url: str, name: str) -> None:
    """A new empty database ``name`` on the server of ``server_url`` (any left by an
    earlier run is dropped first)."""
    drop_database(server_url, name)
    with _maintenance(server_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')


def create_migrated_database(server_url: str, name: str) -> None:
    """A new database ``name`` on the server of ``server_url`` holding what ``manage.py
    migrate`` makes of an empty one (no users): a copy of a template this process migrated
    on first use (PostgreSQL copies a database in a fraction of a second; the migrations
    take seconds of DDL and commits, again for each test)."""
    template = _migrated_template(server_url)
    drop_database(server_url, name)
    with _maintenance(server_url) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')


_migrated: dict[str, str] = {}


def _migrated_template(server_url: str) -> str:
    """The name of this process's migrated template database on ``server_url`` (made on
    first use by ``manage.py migrate`` run as dshweb runs it, dropped at exit)."""
    if server_url not in _migrated:
        name = f"dshweb_tmpl_{os.getpid()}"
        create_database(server_url, name)
        atexit.register(drop_database, server_url, name)
        data = Path(tempfile.mkdtemp(prefix="dshweb-template-"))
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
            env |= {
                "DATABASE_URL": urlunsplit(urlsplit(server_url)._replace(path=f"/{name}")),
                "DSHWEB_DATA_DIR": str(data),
                "DSHWEB_NO_DEMO": "1",
                "DSHWEB_SECRET_KEY": secrets.token_urlsafe(50),
                "DJANGO_SETTINGS_MODULE": "dshweb.settings",
            }
            done = subprocess.run(
                [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
                cwd=Path(__file__).resolve().parents[2],
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
        finally:
            shutil.rmtree(data, ignore_errors=True)
        if done.returncode != 0:
            pytest.fail(f"manage.py migrate of the template failed:\n{done.stderr[-3000:]}")
        _migrated[server_url] = name
    return _migrated[server_url]


def drop_database(server_url: str, name: str) -> None:
    with _maintenance(server_url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _maintenance(server_url: str) -> psycopg.Connection[tuple[object, ...]]:
    url = urlunsplit(urlsplit(server_url)._replace(path="/postgres"))
    return psycopg.connect(url, autocommit=True)


def reachable(url: str) -> bool:
    """Whether something listens at the host and port of ``url``."""
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), 2).close()
    except OSError:
        return False
    return True


@contextlib.contextmanager
def shared_stores(
    redis_url: str = REDIS_URL, *, migrated: bool = False
) -> Iterator[dict[str, str]]:
    """A new PostgreSQL database (empty, or ``migrated``: as ``manage.py migrate`` leaves
    an empty one, with no user) and a flushed Redis database (``redis_url``'s), as the
    environment variables of every dshweb process of one dashboard (``DATABASE_URL``,
    ``DSHWEB_REDIS_URL``, and the ``DSHWEB_SECRET_KEY`` they share); both emptied after."""
    for url in (POSTGRES_URL, redis_url):
        if not reachable(url):
            pytest.fail(f"no server at {url}: scripts/test starts one, or -m 'not services'")
    import redis

    name = f"dshweb_team_{uuid.uuid4().hex[:12]}"
    (create_migrated_database if migrated else create_database)(POSTGRES_URL, name)
    cache = redis.Redis.from_url(redis_url)
    cache.flushdb()
    try:
        yield {
            "DATABASE_URL": urlunsplit(urlsplit(POSTGRES_URL)._replace(path=f"/{name}")),
            "DSHWEB_REDIS_URL": redis_url,
            # Web workers of one dashboard share the key that signs sessions.
            "DSHWEB_SECRET_KEY": secrets.token_urlsafe(50),
        }
    finally:
        with contextlib.suppress(redis.ConnectionError):  # a test's own Redis may be gone
            cache.flushdb()
        cache.close()
        drop_database(POSTGRES_URL, name)


def query_rows(data_dir: Path, sql: str) -> list[tuple[object, ...]]:
    """The rows ``sql`` selects in the database of the child dshweb whose data folder is
    ``data_dir`` (its PostgreSQL database on a PostgreSQL run, else its ``db.sqlite3``)."""
    url = database_env(data_dir).get("DATABASE_URL")
    if url is None:
        import sqlite3

        with sqlite3.connect(data_dir / "db.sqlite3") as db:
            return [tuple(row) for row in db.execute(sql)]
    with psycopg.connect(url) as conn:
        return [tuple(row) for row in conn.execute(sql)]
