"""The database cannot be reached for a while: pages answer 503 "store unavailable" (never a
500), sockets close with 4503, and collectors retry, keep folding and catch up after.

The connection errors are real ones: a PostgreSQL connection refused by a closed port in
process, and for the real processes a TCP proxy (:mod:`tests.support.tcp_proxy`) between them and
a PostgreSQL database of the test's own, stopped for the outage and started again.
"""

from __future__ import annotations

import dataclasses
import re
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db.utils import ConnectionHandler, InterfaceError, OperationalError, ProgrammingError
from django.test import Client
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.typing import Origin

from dshweb.collect.collected import sealing_key
from dshweb.core.fold.sealed import open_session
from dshweb.live.outage import database_unreachable
from tests.collect.test_collector import (
    HEARTBEAT,
    NAME,
    SECRET,
    WAIT,
    Collector,
    _append,
    _cold,
    _cut,
    _env,
)
from tests.collect.test_worker_processes import _wait
from tests.conftest import FIXTURE_HOMES, REPO, run_python
from tests.live.test_sockets import ORIGIN, _connect, cookie, stop  # noqa: F401  (fixtures)
from tests.support.server import DshwebServer, Process, ServerError, spawn, terminate
from tests.support.stores import POSTGRES_URL, create_database, drop_database, reachable
from tests.support.tcp_proxy import TcpProxy
from tests.support.visitor import Visitor

PASSWORD_IN_URL = "never-shown-7Qz"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _refused() -> OperationalError:
    """The error Django raises when PostgreSQL's port refuses the connection."""
    config = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "dshweb",
        "USER": "dshweb",
        "PASSWORD": PASSWORD_IN_URL,
        "HOST": "127.0.0.1",
        "PORT": str(_closed_port()),
    }
    connection = ConnectionHandler({"default": config})["default"]
    try:
        connection.ensure_connection()
    except OperationalError as error:
        return error
    finally:
        connection.close()
    raise AssertionError("a closed port accepted a connection")


def _caused_by(kind: type[Exception], cause: BaseException) -> Exception:
    try:
        raise kind(str(cause)) from cause
    except kind as error:
        return error


def test_a_refused_connection_is_an_outage(django_db_blocker: Any) -> None:
    with django_db_blocker.unblock():  # a connection attempt, to no test database
        error = _refused()
    assert database_unreachable(error) is True
    assert database_unreachable(RuntimeError("not a database error")) is False


@pytest.mark.parametrize(
    ("kind", "cause", "outage"),
    [
        (OperationalError, psycopg.errors.AdminShutdown("terminating connection"), True),
        (OperationalError, psycopg.errors.CannotConnectNow("the system is starting up"), True),
        (OperationalError, psycopg.errors.TooManyConnections("too many clients"), True),
        (InterfaceError, psycopg.InterfaceError("the connection is closed"), True),
        (InterfaceError, psycopg.InterfaceError("the cursor is closed"), False),
        (OperationalError, psycopg.errors.QueryCanceled("statement timeout"), False),
        (OperationalError, psycopg.errors.LockNotAvailable("could not obtain lock"), False),
        (ProgrammingError, psycopg.errors.UndefinedTable("no such table"), False),
        (OperationalError, sqlite3.OperationalError("unable to open database file"), False),
        (OperationalError, sqlite3.OperationalError("database is locked"), False),
    ],
)
def test_only_connection_errors_are_an_outage(
    kind: type[Exception], cause: Exception, outage: bool
) -> None:
    assert database_unreachable(_caused_by(kind, cause)) is outage


# --- pages and sockets, in process ------------------------------------------------------


@pytest.fixture
def unreachable(settings: Any, monkeypatch: pytest.MonkeyPatch) -> OperationalError:
    """A web worker whose reads of the collected home fail with a real connection error."""
    settings.DSHWEB = {**settings.DSHWEB, "COLLECT": False}
    # The store the page names (settings.DATABASES itself is not overridden in a test).
    shared = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "dshweb_shared",
        "HOST": "db.internal",
        "PORT": "5433",
        "USER": "dshweb",
        "PASSWORD": PASSWORD_IN_URL,
    }
    monkeypatch.setattr(
        "dshweb.live.outage.settings", SimpleNamespace(DATABASES={"default": shared})
    )
    error = _refused()

    def fail(*_: object) -> None:
        raise error

    monkeypatch.setattr("dshweb.collect.shown.worker_homes", fail)
    return error


def _notice(page: str) -> str:
    assert 'id="site-header"' in page
    found = re.search(r'<section [^>]*id="store-unavailable"[^>]*>(.*?)</section>', page, re.S)
    assert found is not None, page[:500]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1))).strip()


@pytest.mark.django_db
@pytest.mark.parametrize("signed_in", [True, False])
@pytest.mark.parametrize("url", ["/", "/homes/local/sessions/any/", "/accounts/login/"])
def test_a_page_says_the_store_is_unavailable(
    unreachable: OperationalError, url: str, signed_in: bool, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client(raise_request_exception=False)
    if signed_in:
        client.force_login(get_user_model().objects.create_user("someone", password="x-x-x-1"))
    response = client.get(url)
    if url != "/accounts/login/" and not signed_in:
        assert response.status_code == 302  # the sign-in page first, as always
        return
    assert response.status_code == 503
    assert response["Retry-After"] == "10"
    page = response.content.decode()
    text = _notice(page)
    assert text.startswith("Store unavailable dshweb cannot reach its store ( PostgreSQL")
    assert "PostgreSQL database dshweb_shared at db.internal:5433" in text
    assert PASSWORD_IN_URL not in page and "Sign out" not in page
    assert PASSWORD_IN_URL not in caplog.text
    assert "Traceback" not in caplog.text  # one line per request, no traceback
    assert [r.levelname for r in caplog.records if "unavailable" in r.getMessage()] == ["WARNING"]


@pytest.mark.django_db
def test_a_programming_error_is_still_a_500(
    settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "COLLECT": False}

    def fail(*_: object) -> None:
        raise _caused_by(ProgrammingError, psycopg.errors.UndefinedTable("no such table"))

    monkeypatch.setattr("dshweb.collect.shown.worker_homes", fail)
    response = Client(raise_request_exception=False).get("/accounts/login/")
    assert response.status_code == 500
    assert "Retry-After" not in response
    assert "Traceback" in caplog.text


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_socket_closes_with_try_again_later(
    unreachable: OperationalError,
    cookie: bytes,  # noqa: F811
    stop: None,  # noqa: F811
) -> None:
    communicator, connected, _ = await _connect("/ws/sessions/", ORIGIN, (b"cookie", cookie))
    assert connected is True
    assert await communicator.receive_output(timeout=WAIT) == {
        "type": "websocket.close",
        "code": 4503,
    }
    await communicator.disconnect()


# --- real processes through a proxy that is stopped and started -------------------------


@pytest.fixture
def proxied_database() -> Iterator[tuple[TcpProxy, str]]:
    """A new PostgreSQL database behind a proxy of the test's own, and its URL through the
    proxy (with a password in it, which trust authentication ignores)."""
    if not reachable(POSTGRES_URL):
        pytest.fail(f"no server at {POSTGRES_URL}: scripts/test starts one, or -m 'not services'")
    name = f"dshweb_outage_{uuid.uuid4().hex[:12]}"
    create_database(POSTGRES_URL, name)
    server = urlsplit(POSTGRES_URL)
    proxy = TcpProxy((server.hostname or "127.0.0.1", server.port or 5432))
    netloc = f"{server.username or 'postgres'}:{PASSWORD_IN_URL}@127.0.0.1:{proxy.port}"
    try:
        yield proxy, urlunsplit(server._replace(netloc=netloc, path=f"/{name}"))
    finally:
        proxy.stop()
        drop_database(POSTGRES_URL, name)


@pytest.mark.services
def test_an_outage_is_a_503_on_the_web_worker_and_the_collector_catches_up(
    tmp_path: Path, proxied_database: tuple[TcpProxy, str]
) -> None:
    proxy, url = proxied_database
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    collector = _ProxiedCollector(tmp_path / "home", data_dir, url)
    run_python("manage.py", "dshweb_bootstrap", "--verbosity", "0", env=collector.env(), check=True)
    second, third = _cut(FIXTURE_HOMES / "subagent-parent", collector.home)
    worker = DshwebServer(
        home=tmp_path / "no-such-home",
        data_dir=data_dir,
        extra_env={"DSHWEB_COLLECT": "off", "DSHWEB_SECRET_KEY": SECRET, "DATABASE_URL": url},
    )
    try:
        worker.prepare()
        collector.start()
        expected = _cold(collector.home)
        collector.wait_for("the first rows", lambda: collector.snapshots(url) == expected)
        worker.start()
        visitor = Visitor(worker)
        assert visitor.get("/")[0] == 200

        proxy.stop()  # the outage: connections refused, open ones cut
        outage_began = time.monotonic()
        for path in ("/", "/accounts/login/", f"/homes/local/sessions/{next(iter(expected))}/"):
            status, page = visitor.get(path)
            assert status == 503, page[:2000]
            assert "Store unavailable" in page and PASSWORD_IN_URL not in page
        # The login is read from the database before any consumer runs: closed with 4503.
        with (
            connect(
                f"ws://127.0.0.1:{worker.port}/ws/sessions/",
                origin=Origin(worker.url),
                additional_headers={"Cookie": f"sessionid={visitor.cookies['sessionid']}"},
                open_timeout=10,
            ) as socket_,
            pytest.raises(ConnectionClosed) as closed,
        ):
            socket_.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4503
        _append(second)  # DSH keeps writing meanwhile: the collector keeps folding
        time.sleep(3 * HEARTBEAT + 1)  # longer than the lease's staleness
        _append(third)
        time.sleep(max(0.0, 10 - (time.monotonic() - outage_began)))
        assert collector.process is not None and collector.process.poll() is None
        proxy.start()

        grown = _cold(collector.home)
        assert grown != expected
        collector.wait_for("the rows caught up", lambda: collector.snapshots(url) == grown)
        _wait("the worker's pages back", lambda: visitor.get("/")[0] == 200, worker)
        assert collector.process.poll() is None
        output = collector.output()
        # Each part that met the outage says so once, not once per retry.
        said = [line for line in output.splitlines() if "is unavailable" in line]
        assert [line.split(":")[0] for line in said if "collector" in line] == [
            f"collector {NAME}"
        ], output
        assert len(said) == len({line.split(":")[0] for line in said}), output
        assert "Traceback" not in output, output
        assert re.search(r"is back after \d+ s; wrote \d+ session\(s\) changed meanwhile", output)
        assert PASSWORD_IN_URL not in output
        server_log = worker.output()
        assert "Traceback" not in server_log and PASSWORD_IN_URL not in server_log
    except ServerError as error:
        pytest.fail(str(error), pytrace=False)
    finally:
        terminate(collector.process)
        worker.stop()


@pytest.mark.services
def test_a_collector_cut_off_while_another_takes_its_stale_lease_exits_1(
    tmp_path: Path, proxied_database: tuple[TcpProxy, str]
) -> None:
    proxy, url = proxied_database
    home = tmp_path / "home"
    cut_off = _ProxiedCollector(home, tmp_path / "cut-off", url)
    cut_off.data_dir.mkdir()
    run_python("manage.py", "dshweb_bootstrap", "--verbosity", "0", env=cut_off.env(), check=True)
    _cut(FIXTURE_HOMES / "subagent-parent", home)
    # The other one reaches the database directly: only the first is cut off.
    direct = urlunsplit(urlsplit(POSTGRES_URL)._replace(path=urlsplit(url).path))
    other = _ProxiedCollector(home, tmp_path / "other", direct)
    other.data_dir.mkdir()
    try:
        cut_off.start()
        expected = _cold(home)
        cut_off.wait_for("the first rows", lambda: cut_off.snapshots(url) == expected)
        proxy.stop()
        time.sleep(3 * HEARTBEAT + 1)  # its lease is stale now
        other.start()
        other.wait_for("the take-over", lambda: "resumed from checkpoints" in other.output())
        proxy.start()
        assert cut_off.process is not None
        assert cut_off.process.wait(timeout=WAIT) == 1, cut_off.output()
        assert "the lease was taken over" in cut_off.output()
        assert other.process is not None and other.process.poll() is None, other.output()
        assert "taking over a stale lease" in other.output()
    finally:
        terminate(cut_off.process)
        terminate(other.process)


@pytest.mark.services
def test_a_collector_stopped_during_an_outage_exits_0_and_leaves_its_lease_to_go_stale(
    tmp_path: Path, proxied_database: tuple[TcpProxy, str]
) -> None:
    proxy, url = proxied_database
    collector = _ProxiedCollector(tmp_path / "home", tmp_path / "data", url)
    collector.data_dir.mkdir()
    run_python("manage.py", "dshweb_bootstrap", "--verbosity", "0", env=collector.env(), check=True)
    second, _ = _cut(FIXTURE_HOMES / "subagent-parent", collector.home)
    try:
        collector.start()
        expected = _cold(collector.home)
        collector.wait_for("the first rows", lambda: collector.snapshots(url) == expected)
        proxy.stop()
        _append(second)
        collector.wait_for("the outage noticed", lambda: "is unavailable" in collector.output())
        assert collector.process is not None
        collector.process.terminate()
        assert collector.process.wait(timeout=WAIT) == 0, collector.output()
        output = collector.output()
        assert "stopped without its last write or releasing the lease" in output
        assert f"home {NAME} not released (the database is unavailable)" in output
        assert "Traceback" not in output, output
        assert collector.snapshots(url) == expected  # nothing written after the outage began
    finally:
        terminate(collector.process)


class _ProxiedCollector(Collector):
    """A collector whose database is reached through the test's proxy."""

    def __init__(self, home: Path, data_dir: Path, url: str) -> None:
        super().__init__(home, data_dir)
        self.url = url

    def env(self) -> dict[str, str]:
        return _env(self.data_dir) | {"DATABASE_URL": self.url}

    def start(self, heartbeat: float = HEARTBEAT) -> Process:
        self.process = spawn(self.command(NAME, heartbeat), cwd=REPO, env=self.env(), log=self.log)
        return self.process

    def snapshots(self, url: str) -> dict[str, tuple[dict[str, object], object]]:
        """The rows as the collector wrote them, read straight from the database."""
        server = urlsplit(POSTGRES_URL)
        direct = urlunsplit(server._replace(path=urlsplit(url).path))
        sql = "SELECT session_id, blob FROM live_collectedsession WHERE home = %s"
        with psycopg.connect(direct) as conn:
            found = conn.execute(sql, (NAME,)).fetchall()
        rows: dict[str, tuple[dict[str, object], object]] = {}
        for session_id, blob in found:
            opened = open_session(bytes(blob), key=sealing_key(SECRET))
            assert opened is not None
            rows[str(session_id)] = (dataclasses.asdict(opened[0]), opened[1])
        return rows
