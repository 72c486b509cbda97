"""``/healthz`` and ``/readyz`` (dshweb.site.health), and what systemd is told.

On a real server (a plain ``daphne dshweb.asgi:application``, as the docs show it, with
a real datagram socket as ``$NOTIFY_SOCKET`` and a watchdog): its services start with it
(the log says so before any request); readiness says "not ready" while the home's first
round cannot end (the test holds the database's lock on the fold checkpoints the round
reads first: a state the test controls, not a race), "ready" once it has, and "not ready"
while the database cannot be opened (SQLite: the file made unreadable, the server run
without root's right to read it anyway; PostgreSQL: the database closed to connections);
liveness answers 200 throughout; systemd hears what the server waits for, READY=1 once
it is ready, and the watchdog's pings.

In process: only GET and HEAD, no cookie, and a proxy's probe is answered whatever its
``Host`` and over plain HTTP behind a TLS proxy (Django would refuse the one and
redirect the other).
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator

from dshweb.alerts.watcher import stop_alert_watcher
from dshweb.asgi import application
from dshweb.live import readiness
from dshweb.live.publisher import stop_publisher
from dshweb.live.service import current_hub, stop_hub
from tests.conftest import FIXTURE_HOMES
from tests.support.notify_socket import notify_socket
from tests.support.server import DshwebServer, ServerError, free_port
from tests.support.stores import REDIS_URL, database_env
from tests.support.unprivileged import without_reading_rights

HELD = 1.5
"""How long the test holds the first round back, asking for readiness meanwhile."""
WAIT = 20.0


def _get(server: DshwebServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _until(server: DshwebServer, path: str, answer: tuple[int, str]) -> None:
    deadline = time.monotonic() + WAIT
    seen: tuple[int, str] | None = None
    while time.monotonic() < deadline:
        try:
            seen = _get(server, path)
        except OSError:  # not listening yet
            seen = None
        if seen == answer:
            return
        time.sleep(0.1)
    raise AssertionError(f"{path}: {seen}, not {answer}\n{server.output(30)}")


@contextlib.contextmanager
def _checkpoints_locked(server: DshwebServer) -> Iterator[None]:
    """The fold checkpoints' table locked against readers: a hub's first round, which
    begins by reading them, waits until the lock is let go."""
    url = database_env(server.data_dir).get("DATABASE_URL")
    if url is None:
        db = sqlite3.connect(server.data_dir / "db.sqlite3", isolation_level=None)
        try:
            db.execute("BEGIN EXCLUSIVE")  # a rollback journal: no reader gets in
            yield
        finally:
            db.execute("ROLLBACK")
            db.close()
        return
    with psycopg.connect(url) as conn, conn.transaction():
        conn.execute("LOCK TABLE live_foldcheckpoint IN ACCESS EXCLUSIVE MODE")
        yield


@contextlib.contextmanager
def _database_away(server: DshwebServer) -> Iterator[None]:
    """The server's database cannot be opened until the block ends."""
    url = database_env(server.data_dir).get("DATABASE_URL")
    if url is None:
        db = server.data_dir / "db.sqlite3"
        db.chmod(0o000)
        try:
            yield
        finally:
            db.chmod(0o600)
        return
    name = url.rsplit("/", 1)[1]
    maintenance = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name]
        )
        try:
            yield
        finally:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


def test_readiness_follows_the_first_round_and_the_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    with notify_socket() as systemd:
        server = DshwebServer(
            home=home,
            data_dir=tmp_path / "data",
            extra_env=systemd.env(watchdog_usec=1_000_000),
            # On SQLite, a file's mode decides whether the server can open it, root or not.
            wrapper=[] if database_env(tmp_path / "data") else without_reading_rights([]),
        )
        try:
            server.prepare()
            with _checkpoints_locked(server):
                server.start(wait=False)
                _starts_before_any_request(server)
                _until(server, "/healthz", (200, "ok\n"))
                held_until = time.monotonic() + HELD
                while time.monotonic() < held_until:
                    status, said = _get(server, "/readyz")
                    assert status == 503, said
                    assert said == "not ready: folding the home\n", said
                    time.sleep(0.2)
                systemd.wait_for("STATUS=not ready: folding the home", 5)
                systemd.wait_for("EXTEND_TIMEOUT_USEC=", 5)
                assert "READY=1" not in systemd.lines()
            _until(server, "/readyz", (200, "ready\n"))
            ready = systemd.wait_for("READY=1", 5)
            systemd.wait_for("WATCHDOG=1", 2, after=ready + 1)  # pinged every half second
            with _database_away(server):
                _until(server, "/readyz", (503, "not ready: the database does not answer\n"))
                assert _get(server, "/healthz") == (200, "ok\n")  # live all the same
                pinged = len(systemd.lines())
                systemd.wait_for("WATCHDOG=1", 2, after=pinged)  # the hub is at work
            _until(server, "/readyz", (200, "ready\n"))
        except ServerError as error:
            raise AssertionError(str(error)) from None
        finally:
            server.stop()
        assert systemd.lines().count("READY=1") == 1
    assert "not ready: the database does not answer" in server.output()  # said in its log


def _starts_before_any_request(server: DshwebServer) -> None:
    deadline = time.monotonic() + WAIT
    while "services started by" not in server.output():
        assert time.monotonic() < deadline, server.output()
        assert server.process is not None and server.process.poll() is None, server.output()
        time.sleep(0.05)
    assert "services started by the server's start" in server.output()


# -- in process ----------------------------------------------------------------------------


async def _ask(
    path: str, method: str = "GET", headers: list[tuple[bytes, bytes]] | None = None
) -> dict[str, Any]:
    communicator = HttpCommunicator(application, method, path, headers=headers or [])
    return dict(await communicator.get_response(timeout=30))


@pytest_asyncio.fixture
async def ready_hub(settings: Any, tmp_path: Path) -> AsyncIterator[None]:
    """A hub that has folded its home through; what a probe started stopped after."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home}
    await sync_to_async(current_hub().wait_ready)(60)
    yield
    await stop_alert_watcher()
    await stop_publisher()
    stop_hub()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_probe_passes_the_host_check_and_the_https_redirect(
    settings: Any, ready_hub: None
) -> None:
    settings.ALLOWED_HOSTS = ["dsh.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    for path, said in (("/healthz", b"ok\n"), ("/readyz", b"ready\n")):
        answer = await _ask(path, headers=[(b"host", b"127.0.0.1:8000")])
        assert (answer["status"], answer["body"]) == (200, said)
        headers = dict(answer["headers"])
        assert headers[b"cache-control"] == b"no-store", headers
        assert b"set-cookie" not in headers and b"vary" not in headers, headers
    # Django itself still turns such a request away.
    page = await _ask("/accounts/login/", headers=[(b"host", b"127.0.0.1:8000")])
    assert page["status"] == 400


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_only_get_and_head(ready_hub: None) -> None:
    head = await _ask("/readyz", "HEAD")
    assert (head["status"], head["body"]) == (200, b"")
    assert dict(head["headers"])[b"content-length"] == b"6"
    posted = await _ask("/readyz", "POST")
    assert posted["status"] == 405 and dict(posted["headers"])[b"allow"] == b"GET, HEAD"


def test_a_team_is_ready_only_while_its_redis_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSHWEB_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")  # no one
    assert readiness.redis_reason() == "Redis does not answer"
    monkeypatch.delenv("DSHWEB_REDIS_URL")
    assert readiness.redis_reason() is None  # no team, no Redis to ask


@pytest.mark.services
def test_a_redis_that_answers_is_no_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSHWEB_REDIS_URL", REDIS_URL)
    assert readiness.redis_reason() is None


@pytest.mark.django_db(transaction=True)
def test_a_web_worker_waits_for_no_home(settings: Any) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "COLLECT": False, "DSH_HOME": Path("/nonexistent")}
    assert readiness.not_ready() is None
    assert not readiness.starting() and readiness.alive()
