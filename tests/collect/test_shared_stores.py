"""Shared stores: ``DATABASE_URL`` (PostgreSQL) and ``DSHWEB_REDIS_URL`` (Redis).

The settings are read from the environment once (:mod:`dshweb.environment`); the
``services`` tests run two real dshweb servers (Daphne in child processes) on one real
PostgreSQL database and one real Redis, as web workers of a team would: what one writes
or announces, the other reads or pushes.
"""

from __future__ import annotations

import re
import shutil
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from websockets.sync.client import connect
from websockets.typing import Origin

from dshweb import environment
from dshweb.environment import ConfigurationError, Stores
from tests.conftest import FIXTURE_HOMES
from tests.support.server import PASSWORD, USERNAME, DshwebServer
from tests.support.stores import shared_stores

SESSION = "manual-compact"


# --- reading the environment ---------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgres://dsh:pw@127.0.0.1:5433/team",
            {"NAME": "team", "USER": "dsh", "PASSWORD": "pw", "HOST": "127.0.0.1", "PORT": 5433},
        ),
        ("postgresql://db.internal/dshweb", {"NAME": "dshweb", "HOST": "db.internal"}),
    ],
)
def test_a_postgres_url_is_the_database(url: str, expected: dict[str, object]) -> None:
    database = environment.database_settings(Stores(url, ""), Path("/data"))
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert {key: database[key] for key in expected} == expected
    assert database["CONN_HEALTH_CHECKS"] is True


def test_no_database_url_is_sqlite_in_the_data_folder() -> None:
    database = environment.database_settings(Stores("", ""), Path("/data"))
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert database["NAME"] == Path("/data/db.sqlite3")


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://root@127.0.0.1/dshweb", "this one has scheme 'mysql'"),
        ("sqlite:///tmp/db.sqlite3", "this one has scheme 'sqlite'"),
        ("postgres://127.0.0.1:5432/", "and no database name"),
        ("db.internal/dshweb", "this one has no scheme"),
    ],
)
def test_a_database_url_that_is_not_postgres_is_refused(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        environment.database_url(url)
    assert str(refused.value).startswith("DATABASE_URL: dshweb's shared database is PostgreSQL")
    assert says in str(refused.value)


def test_a_redis_url_is_the_channel_layer_and_the_cache() -> None:
    stores = Stores("", environment.redis_url(" redis://127.0.0.1:6379/3 "))
    assert environment.channel_layer_settings(stores) == {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [{"address": "redis://127.0.0.1:6379/3", "socket_timeout": None}],
            "prefix": "dshweb",
        },
    }
    assert environment.cache_settings(stores) == {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:6379/3",
        "KEY_PREFIX": "dshweb",
    }


def test_no_redis_url_keeps_both_in_the_process() -> None:
    stores = Stores("", "")
    assert environment.channel_layer_settings(stores)["BACKEND"] == (
        "channels.layers.InMemoryChannelLayer"
    )
    assert environment.cache_settings(stores)["BACKEND"] == (
        "django.core.cache.backends.locmem.LocMemCache"
    )


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "127.0.0.1:6379", "memcached://x"])
def test_a_redis_url_that_is_not_redis_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match=r"^DSHWEB_REDIS_URL: write it as redis://"):
        environment.redis_url(url)


# --- two web workers on one PostgreSQL and one Redis ---------------------------------


@pytest.fixture
def stores() -> Iterator[dict[str, str]]:
    """A new PostgreSQL database, migrated (what every dshweb process's start would make
    of an empty one, copied from a template), and a flushed Redis database, as
    environment variables."""
    with shared_stores(migrated=True) as made:
        yield made


@pytest.fixture(scope="module")
def worker_pair(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[DshwebServer, DshwebServer, str]]:
    """Two dshweb servers on one home, one database and one Redis (its URL the third),
    for the tests of a module; the engine a port that accepts and never answers (a Compact
    press stays in flight for seconds)."""
    folder = tmp_path_factory.mktemp("workers")
    home = folder / "home"
    shutil.copytree(FIXTURE_HOMES / SESSION, home)
    engine = socket.create_server(("127.0.0.1", 0))
    servers = []
    try:
        with shared_stores(migrated=True) as stores:
            env = stores | {
                "DSHWEB_ENGINE_URL": f"http://127.0.0.1:{engine.getsockname()[1]}/?token=t"
            }
            try:
                for name in ("a", "b"):
                    server = DshwebServer(home=home, data_dir=folder / name, extra_env=dict(env))
                    server.data_dir.mkdir()
                    if name == "a":
                        server.prepare()  # one database: the user is made once
                    else:
                        server.manage("dshweb_bootstrap", "--verbosity", "0")
                    server.start()
                    servers.append(server)
                yield servers[0], servers[1], stores["DSHWEB_REDIS_URL"]
            finally:
                for server in servers:
                    server.stop()
    finally:
        engine.close()


@pytest.fixture
def workers(
    worker_pair: tuple[DshwebServer, DshwebServer, str],
) -> tuple[DshwebServer, DshwebServer]:
    """The module's two web workers, with no failed sign-in counted: the sign-in
    throttle's counts (in the shared cache, Redis) of the tests before are removed."""
    import redis

    a, b, redis_url = worker_pair
    cache = redis.Redis.from_url(redis_url)
    try:
        counts = list(cache.scan_iter(match="*dshweb.login.*"))
        if counts:
            cache.delete(*counts)
    finally:
        cache.close()
    return a, b


class Client:
    """Cookies and CSRF against one server, as a browser keeps them."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def cookie(self, name: str) -> str:
        return next((c.value or "" for c in self.jar if c.name == name), "")

    def open(
        self, path: str, data: dict[str, str] | None = None, **headers: str
    ) -> tuple[int, str]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(self.base + path, data=body)
        if data is not None:
            request.add_header("X-CSRFToken", self.cookie("csrftoken"))
        for name, value in headers.items():
            request.add_header(name.replace("_", "-"), value)
        try:
            with self.opener.open(request, timeout=30) as reply:
                return int(reply.status), reply.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode(errors="replace")

    def sign_in(self, password: str) -> tuple[int, str]:
        page = self.open("/accounts/login/")[1]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token is not None
        form = {"username": USERNAME, "password": password, "csrfmiddlewaretoken": token.group(1)}
        return self.open("/accounts/login/", form)


@pytest.mark.services
def test_a_sign_in_on_one_worker_is_a_sign_in_on_the_other(
    workers: tuple[DshwebServer, DshwebServer],
) -> None:
    a, b = workers
    client = Client(a.url)
    assert client.sign_in(PASSWORD)[0] == 200 and client.cookie("sessionid")
    # The same cookie, sent to the other worker: one session table, one signing key.
    other = Client(b.url)
    other.jar = client.jar
    other.opener = client.opener
    status, page = other.open(f"/homes/local/sessions/{SESSION}/")
    assert status == 200 and f'data-session-id="{SESSION}"' in page


@pytest.mark.services
def test_failed_sign_ins_are_counted_across_workers(
    workers: tuple[DshwebServer, DshwebServer],
) -> None:
    a, b = workers
    for _ in range(5):
        status, page = Client(a.url).sign_in("wrong password")
        assert status == 200 and "do not match" in page
    # The sixth try goes to the other worker, with the right password: refused there.
    status, page = Client(b.url).sign_in(PASSWORD)
    assert status == 429
    assert "Too many failed sign-ins for this username from your address" in page


@pytest.mark.services
def test_a_compact_press_on_one_worker_reaches_a_socket_on_the_other(
    workers: tuple[DshwebServer, DshwebServer],
) -> None:
    a, b = workers
    watcher = Client(b.url)
    assert watcher.sign_in(PASSWORD)[0] == 200
    with connect(
        f"ws://127.0.0.1:{b.port}/ws/homes/local/sessions/{SESSION}/",
        origin=Origin(b.url),
        additional_headers={"Cookie": f"sessionid={watcher.cookie('sessionid')}"},
        open_timeout=30,
    ) as live:
        first = str(live.recv(timeout=30))
        assert 'id="compact-status"' in first and 'data-state="requested"' not in first
        presser = Client(a.url)
        assert presser.sign_in(PASSWORD)[0] == 200
        assert (
            presser.open(f"/homes/local/sessions/{SESSION}/compact/", {}, HX_Request="true")[0]
            == 204
        )
        states: list[str] = []
        deadline = time.monotonic() + 60
        while "failed" not in states:
            assert time.monotonic() < deadline, states
            message = str(live.recv(timeout=max(0.1, deadline - time.monotonic())))
            states += re.findall(r'id="compact-status"[^>]*data-state="(\w+)"', message)
    # Announced by worker A through Redis, rendered by worker B from the shared database.
    assert states[0] == "requested" and states[-1] == "failed", states
    page = watcher.open(f"/homes/local/sessions/{SESSION}/")[1]
    assert "The DSH engine is unreachable" in page
