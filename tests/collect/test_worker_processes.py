"""A collector and a web worker as real processes on one database: ``manage.py
dshweb_collect`` on a copy of a fixture home, and Daphne with ``DSHWEB_COLLECT=off``
whose ``DSH_HOME`` does not exist. What a person sees on the worker is checked against a
fold of the same home made here; the worker never holds a file of the home open.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core import signing
from websockets.sync.client import connect
from websockets.typing import Origin

from dshweb.core.fold.gauge import ContextGauge
from dshweb.profiles.remote import ANSWER_TIMEOUT
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
    bootstrap,
)
from tests.collect.test_shared_stores import stores  # noqa: F401  (the fixture)
from tests.conftest import FIXTURE_HOMES, REPO
from tests.support.server import (
    DshwebServer,
    ServerError,
    spawn,
    terminate,
)
from tests.support.visitor import Visitor, form_fields


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    data_dir = tmp_path / "data"
    bootstrap(data_dir)
    made = Collector(tmp_path / "home", data_dir)
    yield made
    terminate(made.process)


@pytest.fixture
def web_worker(collector: Collector, tmp_path: Path) -> Iterator[DshwebServer]:
    """A web worker on the collector's database, whose DSH home does not exist."""
    server = DshwebServer(
        home=tmp_path / "no-such-home",
        data_dir=collector.data_dir,
        extra_env={"DSHWEB_COLLECT": "off", "DSHWEB_SECRET_KEY": SECRET},
    )
    try:
        server.prepare()
    except ServerError as error:
        pytest.fail(str(error), pytrace=False)
    yield server
    server.stop()


def _ring(html: str) -> dict[str, str]:
    """The numbers the session page's ring shows."""
    found = re.search(r'<figure[^>]*id="context-ring"[^>]*>', html)
    assert found, html[:2000]
    return dict(re.findall(r'data-(used|window|percent|band)="([^"]*)"', found[0]))


def _numbers(gauge: object) -> dict[str, str]:
    """What the ring shows for ``gauge``, from a fold made here."""
    assert isinstance(gauge, ContextGauge)
    shown = {"used": gauge.used, "window": gauge.window, "percent": gauge.percent}
    return {k: "" if v is None else str(v) for k, v in shown.items()} | {"band": str(gauge.band)}


def _open_under(pid: int, folder: Path) -> list[str]:
    """The files process ``pid`` holds open under ``folder``."""
    fds = Path(f"/proc/{pid}/fd")
    opened = []
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(folder)):
            opened.append(target)
    return opened


def _wait(what: str, ready: object, server: DshwebServer, timeout: float = WAIT) -> None:
    assert callable(ready)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    pytest.fail(f"{what}: not within {timeout} s\n{server.output(60)}")


def test_a_web_worker_shows_what_the_collector_folded_and_when_it_went_offline(
    collector: Collector, web_worker: DshwebServer
) -> None:
    home = collector.home
    second, _ = _cut(FIXTURE_HOMES / "subagent-parent", home)
    collector.start()
    expected = _cold(home)
    collector.wait_for(
        "the collector's rows",
        lambda: {s: (snap, g) for s, (_, snap, g) in collector.rows().items()} == expected,
    )
    web_worker.start()
    visitor = Visitor(web_worker)
    assert web_worker.process is not None
    assert not web_worker.home.exists()

    status, page = visitor.get("/")
    assert status == 200, page[:2000]
    assert f'data-home="{NAME}"' in page and 'id="collector-offline"' not in page
    assert set(re.findall(r'data-session-id="([^"]+)"', page)) == set(expected)
    for session_id, (_, gauge) in expected.items():
        status, page = visitor.get(f"/homes/{NAME}/sessions/{session_id}/")
        assert status == 200, page[:2000]
        assert _ring(page) == _numbers(gauge)

    # Frames appended reach the worker's pages (read from the rows the collector wrote).
    _append(second)
    grown = {s: _numbers(g) for s, (_, g) in _cold(home).items()}
    assert grown != {s: _numbers(g) for s, (_, g) in expected.items()}
    _wait(
        "the grown sessions on the worker's pages",
        lambda: all(
            _ring(visitor.get(f"/homes/{NAME}/sessions/{s}/")[1]) == n for s, n in grown.items()
        ),
        web_worker,
    )
    assert _open_under(web_worker.process.pid, home.resolve()) == []

    # kill -9: the lease goes stale and the pages say so, the rows still shown.
    assert collector.process is not None
    collector.process.kill()
    collector.process.wait(10)
    _wait(
        "the offline banner",
        lambda: f"collector of {NAME} offline since" in visitor.get("/")[1],
        web_worker,
        timeout=3 * HEARTBEAT + 10,
    )
    status, page = visitor.get("/")
    assert status == 200
    assert set(re.findall(r'data-session-id="([^"]+)"', page)) == set(expected)
    assert "Reading the DSH home" not in page
    status, page = visitor.get("/settings/")  # each collected home, and whether it runs
    assert status == 200 and f'data-home="{NAME}"' in page and "collector offline" in page
    status, page = visitor.get(f"/homes/{NAME}/settings/")
    assert status == 503 and f"the collector of {NAME} is not running" in page
    assert not web_worker.home.exists()
    assert web_worker.process.poll() is None, web_worker.output(60)


@pytest.mark.services
def test_frames_appended_reach_a_socket_on_the_web_worker_through_redis(
    tmp_path: Path,
    stores: dict[str, str],  # noqa: F811  (the fixture, imported above)
) -> None:
    home, data_dir = tmp_path / "home", tmp_path / "data"
    second, _ = _cut(FIXTURE_HOMES / "subagent-parent", home)
    expected = _cold(home)
    worker = DshwebServer(
        home=tmp_path / "no-such-home",
        data_dir=data_dir,
        extra_env=stores | {"DSHWEB_COLLECT": "off"},
    )
    process = None
    try:
        worker.prepare()
        made = Collector(home, data_dir)
        process = spawn(made.command(), cwd=REPO, env=_env(data_dir) | stores, log=made.log)
        worker.start()
        visitor = Visitor(worker)
        _wait(
            "the collector's sessions on the worker",
            lambda: (
                set(re.findall(r'data-session-id="([^"]+)"', visitor.get("/")[1])) == set(expected)
            ),
            worker,
        )
        preview = tmp_path / "preview"  # the home as it will be, folded here
        shutil.copytree(home, preview)
        _append({preview / path.relative_to(home): frames for path, frames in second.items()})
        grown = {s: _numbers(g) for s, (_, g) in _cold(preview).items()}
        watched = next(s for s in grown if grown[s] != _numbers(expected[s][1]))
        with connect(
            f"ws://127.0.0.1:{worker.port}/ws/homes/{NAME}/sessions/{watched}/",
            origin=Origin(worker.url),
            additional_headers={"Cookie": f"sessionid={visitor.cookies['sessionid']}"},
            open_timeout=30,
        ) as live:
            assert _ring(str(live.recv(timeout=30))) == _numbers(expected[watched][1])
            _append(second)
            deadline = time.monotonic() + 15
            seen: list[dict[str, str]] = []
            while grown[watched] not in seen:
                left = deadline - time.monotonic()
                assert left > 0, (seen, grown[watched], made.output(), worker.output(40))
                message = str(live.recv(timeout=left))
                if 'id="context-ring"' in message:
                    seen.append(_ring(message))
    finally:
        terminate(process)
        worker.stop()


@pytest.mark.services
def test_compact_on_the_web_worker_is_run_by_the_collector_of_the_home(
    tmp_path: Path,
    stores: dict[str, str],  # noqa: F811  (the fixture, imported above)
) -> None:
    """A press on the worker (HTTP, CSRF) travels over Redis to the collector process,
    which asks its own ``dsh web`` (a port that accepts and never answers: the launch
    token only in the collector's environment) and records the failure; the worker's open
    session socket shows requested, then failed."""
    home, data_dir = tmp_path / "home", tmp_path / "data"
    _cut(FIXTURE_HOMES / "subagent-parent", home)
    expected = _cold(home)
    engine = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    engine_url = f"http://127.0.0.1:{engine.getsockname()[1]}/?token=launch-token-stays-there"
    worker = DshwebServer(
        home=tmp_path / "no-such-home",
        data_dir=data_dir,
        extra_env=stores | {"DSHWEB_COLLECT": "off"},
    )
    process = None
    try:
        worker.prepare()
        made = Collector(home, data_dir)
        env = _env(data_dir) | stores | {"DSHWEB_ENGINE_URL": engine_url}
        process = spawn(made.command(heartbeat=1.0), cwd=REPO, env=env, log=made.log)
        worker.start()
        visitor = Visitor(worker)
        _wait(
            "the collector's sessions on the worker",
            lambda: (
                set(re.findall(r'data-session-id="([^"]+)"', visitor.get("/")[1])) == set(expected)
            ),
            worker,
        )
        session_id = sorted(expected)[0]
        with connect(
            f"ws://127.0.0.1:{worker.port}/ws/homes/{NAME}/sessions/{session_id}/",
            origin=Origin(worker.url),
            additional_headers={"Cookie": f"sessionid={visitor.cookies['sessionid']}"},
            open_timeout=30,
        ) as live:
            assert 'data-state="idle"' in _status(str(live.recv(timeout=30)))
            status, _ = visitor.post(f"/homes/{NAME}/sessions/{session_id}/compact/")
            assert status == 204
            states: list[str] = []
            deadline = time.monotonic() + 40
            while "failed" not in states:
                left = deadline - time.monotonic()
                assert left > 0, (states, made.output(), worker.output(40))
                line = _status(str(live.recv(timeout=left)))
                if line:
                    states.append(re.findall(r'data-state="(\w+)"', line)[0])
                    last = line
        assert states[0] == "requested" and states[-1] == "failed", states
        assert "The DSH engine is unreachable" in last and "hung?" in last
        with psycopg.connect(stores["DATABASE_URL"]) as db:
            ((state, outcome, message, owner, answer),) = db.execute(
                "SELECT state, outcome, message, owner, dsh_web_answer "
                "FROM dashboard_compactionrequest"
            ).fetchall()
        assert (state, outcome) == ("failed", "unreachable")
        assert "does not answer (hung?)" in str(message) and str(owner).startswith("collector/")
        assert "launch-token-stays-there" not in f"{message}{answer}"
        assert "launch-token-stays-there" not in worker.output(400)
    finally:
        engine.close()
        terminate(process)
        worker.stop()


def _status(message: str) -> str:
    """The Compact status line in a pushed message ("" when it has none)."""
    found = re.search(r'<div id="compact-status"[^>]*>[^<]*</div>', message)
    return found[0] if found else ""


@pytest.mark.services
def test_settings_of_a_collected_home_are_saved_by_its_collector_through_redis(
    tmp_path: Path,
    stores: dict[str, str],  # noqa: F811  (the fixture, imported above)
) -> None:
    """A staff user on the worker opens a collected home's context-truth form and saves it:
    the page and the save travel over Redis to the collector process, which writes its own
    home's patch file; the worker's process never opens it."""
    home, data_dir = tmp_path / "home", tmp_path / "data"
    _cut(FIXTURE_HOMES / "subagent-parent", home)
    patch = home / "profiles" / "sdk" / "cordis.patch.yml"
    before = patch.read_text()
    worker = DshwebServer(
        home=tmp_path / "no-such-home",
        data_dir=data_dir,
        extra_env=stores | {"DSHWEB_COLLECT": "off"},
    )
    process = None
    try:
        worker.prepare()
        made = Collector(home, data_dir)
        process = spawn(made.command(), cwd=REPO, env=_env(data_dir) | stores, log=made.log)
        worker.start()
        visitor = Visitor(worker)
        _wait(
            "the home on the worker", lambda: f'data-home="{NAME}"' in visitor.get("/")[1], worker
        )
        url = f"/homes/{NAME}/settings/sdk/context-truth/"
        # Over Redis to the collector, which runs dsh for it: up to the worker's own wait on
        # a loaded machine (a full run once took more than 10 s).
        status, form = visitor.get(url, timeout=ANSWER_TIMEOUT)
        assert status == 200, (form[-2000:], made.output(), worker.output(40))
        fields = form_fields(form, "settings-form") | {"language": "zh", "quantumPercent": "10"}
        status, page, landed = visitor.submit(url, fields)
        assert (status, landed) == (200, worker.url + url), page[-2000:]
        assert "Saved context-truth in profiles/sdk/cordis.patch.yml." in page
        assert patch.read_text() != before
        assert "language: zh" in patch.read_text()
        assert worker.process is not None
        assert _open_under(worker.process.pid, home.resolve()) == []
    finally:
        terminate(process)
        worker.stop()


class _Old(signing.TimestampSigner):
    """Signs as if an hour ago."""

    def timestamp(self) -> str:
        return signing.b62_encode(int(time.time()) - 3600)


@pytest.mark.services
def test_commands_not_signed_by_this_installation_are_refused_and_logged(
    tmp_path: Path,
    stores: dict[str, str],  # noqa: F811  (the fixture, imported above)
) -> None:
    """Redis access alone: a settings save sent straight to the collector's group in the
    name of a staff user, unsigned, forged, tampered with or too old, is refused and
    logged, and changes nothing; a command this installation signed is answered."""
    from channels_redis.core import RedisChannelLayer  # type: ignore[import-untyped]

    from dshweb.collect.commands import ANSWER_SALT, COMMAND_SALT
    from dshweb.environment import Stores, channel_layer_settings
    from dshweb.live.protocol import collector_group

    home, data_dir = tmp_path / "home", tmp_path / "data"
    _cut(FIXTURE_HOMES / "subagent-parent", home)
    patch = home / "profiles" / "sdk" / "cordis.patch.yml"
    before = patch.read_bytes()
    key = stores["DSHWEB_SECRET_KEY"]
    worker = DshwebServer(home=tmp_path / "none", data_dir=data_dir, extra_env=stores)
    process = None
    try:
        worker.prepare()  # the database and its staff user (id 1)
        made = Collector(home, data_dir)
        process = spawn(made.command(), cwd=REPO, env=_env(data_dir) | stores, log=made.log)

        async def send(
            layer: Any, message: dict[str, object], reply_to: str, wait: float
        ) -> object:
            await layer.group_send(collector_group(NAME), message)
            try:
                return await asyncio.wait_for(layer.receive(reply_to), wait)
            except TimeoutError:
                return None

        def attempt(seal: Callable[[dict[str, object]], dict[str, object]], wait: float) -> object:
            async def run() -> object:
                # As dshweb's settings make it (environment.channel_layer_settings).
                config = channel_layer_settings(Stores("", stores["DSHWEB_REDIS_URL"]))["CONFIG"]
                assert isinstance(config, dict)
                layer = RedisChannelLayer(**config)
                reply_to = await layer.new_channel()
                save = {
                    "type": "settings.request",
                    "verb": "save",
                    "arguments": {
                        "profile": "sdk",
                        "section": "context-truth",
                        "config": {"moderateAt": 0.41, "language": "en"},
                        "sha256": hashlib.sha256(before).hexdigest(),
                        "base_text": "",
                        "user_id": 1,
                    },
                    "reply_to": reply_to,
                }
                try:
                    return await send(layer, seal(save), reply_to, wait)
                finally:
                    await layer.close_pools()

            return asyncio.run(run())

        hostile = {
            "unsigned": lambda m: m,
            "forged": lambda m: {
                "type": m["type"],
                "sealed": signing.dumps(m, key="not-the-key", salt=COMMAND_SALT),
            },
            "tampered": lambda m: {
                "type": m["type"],
                "sealed": signing.dumps(
                    m | {"verb": "restore"}, key=key, salt=COMMAND_SALT
                ).partition(":")[0]
                + ":"
                + signing.dumps(m, key=key, salt=COMMAND_SALT).partition(":")[2],
            },
            "expired": lambda m: {
                "type": m["type"],
                "sealed": _Old(key=key, salt=COMMAND_SALT).sign_object(m),
            },
        }

        # Signed with this installation's key: a question for the form is answered (signed too).
        def signed(m: dict[str, object]) -> dict[str, object]:
            get = m | {"verb": "row", "arguments": {"profile": "sdk", "section": "context-truth"}}
            return {"type": m["type"], "sealed": signing.dumps(get, key=key, salt=COMMAND_SALT)}

        deadline = time.monotonic() + WAIT
        while (reply := attempt(signed, 3.0)) is None:  # until the collector listens
            assert time.monotonic() < deadline, made.output()[-3000:]
        assert isinstance(reply, dict), made.output()[-3000:]
        opened = signing.loads(reply["sealed"], key=key, salt=ANSWER_SALT)
        row = opened["data"]
        assert (row["section"], row["sha256"]) == (
            "context-truth",
            hashlib.sha256(before).hexdigest(),
        )
        for name, seal in hostile.items():
            assert attempt(seal, 2.0) is None, name
        log_text = made.output()
        refusals = re.findall(r"refused a command 'settings.request': (.+)", log_text)
        assert len(refusals) == 4, log_text[-3000:]
        assert refusals[0] == "not signed"
        assert refusals[3] == "signed more than 60 s ago"
        assert patch.read_bytes() == before

    finally:
        terminate(process)
        worker.stop()
