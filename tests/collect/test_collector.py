"""``manage.py dshweb_collect`` as real processes on a real copy of a fixture home.

Each collector is a child process with a data folder (and database) of its own; the test
reads its rows straight from that database and opens them with the same secret, and
compares them with a fold of the same home made here, in the test process.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dshweb.collect.collected import sealing_key
from dshweb.core.fold.sealed import open_session
from dshweb.core.log.home import session_logs
from dshweb.live.hub import Hub
from tests.conftest import FIXTURE_HOMES, REPO, run_python
from tests.support.alert_receivers import wait_for_first_look
from tests.support.logbuilder import frames_of
from tests.support.notify_socket import notify_socket
from tests.support.once import made_once
from tests.support.server import Process, spawn, terminate
from tests.support.stores import database_env, query_rows

SECRET = "collector-tests-only-6Kx1"
HEARTBEAT = 0.3
"""The first collector's heartbeat: its lease is free 3 × this after a kill -9."""
WAIT = 30.0
NAME = "fixture"

Frames = dict[Path, list[bytes]]


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
    env.update(
        DSHWEB_DATA_DIR=str(data_dir),
        DSHWEB_NO_DEMO="1",
        DSHWEB_PROFILE="sdk",
        DSHWEB_SECRET_KEY=SECRET,
        DJANGO_SETTINGS_MODULE="dshweb.settings",
        PYTHONUNBUFFERED="1",
    )
    env.update(database_env(data_dir))
    return env


def _cut(source: Path, home: Path) -> tuple[Frames, Frames]:
    """``home``: a copy of ``source`` whose logs hold their first third of frames; the
    second and the last thirds of each log."""
    shutil.copytree(source, home)
    second: Frames = {}
    third: Frames = {}
    for log in session_logs(home):
        frames = frames_of(log.path)
        a = max(2, len(frames) // 3)
        b = max(a, 2 * len(frames) // 3)
        log.path.write_bytes(b"".join(frames[:a]))
        second[log.path], third[log.path] = frames[a:b], frames[b:]
    return second, third


def _append(frames: Frames) -> int:
    written = 0
    for path, chunks in frames.items():
        for chunk in chunks:  # one frame per write, as DSH appends
            with path.open("ab") as handle:
                handle.write(chunk)
            written += len(chunk)
    return written


def _cold(home: Path) -> dict[str, tuple[dict[str, object], object]]:
    hub = Hub(home, "sdk")
    hub.cold_start()
    return {s: (dataclasses.asdict(v.snapshot), v.gauge) for s, v in hub.view().sessions.items()}


class Collector:
    def __init__(self, home: Path, data_dir: Path) -> None:
        self.home, self.data_dir = home, data_dir
        self.log = data_dir / "collector.log"
        self.process: Process | None = None
        self.extra_env: dict[str, str] = {}
        """Set on top of its environment (e.g. ``DSHWEB_WEBHOOK_ALLOWED_HOSTS``)."""

    def command(self, name: str = NAME, heartbeat: float = HEARTBEAT) -> list[str]:
        home = ["--home", str(self.home), "--name", name, "--heartbeat", str(heartbeat)]
        return [sys.executable, "manage.py", "dshweb_collect", *home]

    def start(self, heartbeat: float = HEARTBEAT) -> Process:
        with self.log.open("ab") as out:
            out.write(b"=== start\n")
        self.process = spawn(
            self.command(heartbeat=heartbeat),
            cwd=REPO,
            env=_env(self.data_dir) | self.extra_env,
            log=self.log,
        )
        return self.process

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def rows(self) -> dict[str, tuple[int, dict[str, object], object]]:
        found = query_rows(
            self.data_dir,
            f"SELECT session_id, version, blob FROM live_collectedsession WHERE home = '{NAME}'",
        )
        rows: dict[str, tuple[int, dict[str, object], object]] = {}
        for session_id, version, blob in found:
            assert isinstance(blob, bytes | memoryview) and isinstance(version, int)
            opened = open_session(bytes(blob), key=sealing_key(SECRET))
            assert opened is not None, "a row this code cannot open"
            rows[str(session_id)] = (version, dataclasses.asdict(opened[0]), opened[1])
        return rows

    def wait_for(self, what: str, ready: Callable[[], bool], timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            if self.process is not None and self.process.poll() is not None:
                break
            time.sleep(0.1)
        pytest.fail(f"{what}: not within {timeout} s\n--- collector output\n{self.output()}")


def bootstrap(data_dir: Path) -> None:
    """``manage.py dshweb_bootstrap`` in a collector's new data folder. On SQLite, a copy
    of the folder one bootstrap of the run made (tests/support/once.py: the same
    migrations and first superuser; a process start and every migration saved per
    collector); on PostgreSQL, every time."""
    if database_env(data_dir):
        run_python(
            "manage.py", "dshweb_bootstrap", "--verbosity", "0", env=_env(data_dir), check=True
        )
        return

    def make(folder: Path) -> None:
        run_python(
            "manage.py",
            "dshweb_bootstrap",
            "--verbosity",
            "0",
            env=_env(folder / "data"),
            check=True,
        )

    shutil.copytree(made_once("bootstrapped-collector", make) / "data", data_dir)


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    data_dir = tmp_path / "data"
    bootstrap(data_dir)
    made = Collector(tmp_path / "home", data_dir)
    yield made
    terminate(made.process)


def _snapshots(rows: dict[str, tuple[int, dict[str, object], object]]) -> dict[str, object]:
    return {sid: snapshot for sid, (_, snapshot, _) in rows.items()}


def test_a_name_that_cannot_name_a_home_is_refused(collector: Collector) -> None:
    done = run_python(*collector.command("my home")[1:], env=_env(collector.data_dir), timeout=60)
    assert done.returncode == 1
    assert "--name: 'my home' is not a home name: use 1 to 64 ASCII letters" in done.stderr
    assert not query_rows(collector.data_dir, "SELECT name FROM live_collectorlease")


def test_kill_9_then_a_restart_resumes_from_the_checkpoints(
    collector: Collector, tmp_path: Path
) -> None:
    home = collector.home
    second, third = _cut(FIXTURE_HOMES / "subagent-parent", home)
    first = collector.start()
    expected = _cold(home)
    assert len(expected) == 2
    collector.wait_for(
        "the first collector's rows",
        lambda: {s: (snap, g) for s, (_, snap, g) in collector.rows().items()} == expected,
    )
    collector.wait_for(
        "its checkpoints",
        lambda: (
            query_rows(collector.data_dir, "SELECT COUNT(*) FROM live_foldcheckpoint") == [(2,)]
        ),
    )
    versions = {sid: version for sid, (version, _, _) in collector.rows().items()}

    # A second collector of the same home, by name or by path, refuses and says why.
    for name in (NAME, "another"):
        done = run_python(*collector.command(name)[1:], env=_env(collector.data_dir), timeout=60)
        assert done.returncode == 2, done.stderr
        assert re.fullmatch(
            rf"CommandError: home {NAME} \({re.escape(str(home.resolve()))}\) is collected "
            rf"by .+:{first.pid} since \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC, "
            r"last seen \d+ s ago\n",
            done.stderr,
        ), done.stderr

    first.kill()  # kill -9: no release, no last checkpoint
    first.wait(10)
    grown = _append(second)
    assert grown > 0
    time.sleep(3 * HEARTBEAT + 0.5)  # the lease goes stale
    collector.start(heartbeat=2.0)
    expected = _cold(home)
    collector.wait_for(
        "the restarted collector's rows",
        lambda: {s: (snap, g) for s, (_, snap, g) in collector.rows().items()} == expected,
    )
    reports = re.findall(
        r"collector fixture: (\d+) session\(s\), (\d+) resumed from checkpoints at \d+ bytes; "
        r"read (\d+) bytes since",
        collector.output(),
    )
    assert len(reports) == 2, collector.output()
    assert reports[1] == ("2", "2", str(grown))  # only the bytes written since
    assert "taking over a stale lease: home fixture" in collector.output()
    rows = collector.rows()
    assert all(rows[sid][0] >= version for sid, version in versions.items())

    # Frames appended while it runs reach the rows within seconds; versions only grow.
    started = time.monotonic()
    _append(third)
    final = {sid: snap for sid, (snap, _) in _cold(home).items()}
    collector.wait_for("the appended frames", lambda: _snapshots(collector.rows()) == final, 10)
    assert time.monotonic() - started < 10
    assert all(collector.rows()[sid][0] >= version for sid, (version, _, _) in rows.items())

    assert collector.process is not None
    collector.process.send_signal(signal.SIGTERM)
    assert collector.process.wait(10) == 0, collector.output()
    (released,) = query_rows(
        collector.data_dir, f"SELECT released_at FROM live_collectorlease WHERE name = '{NAME}'"
    )
    assert released[0] is not None
    assert "stopped; home fixture released" in collector.output()


RULE = """
from django.contrib.auth import get_user_model
from dshweb.alerts.models import AlertRule
user = get_user_model().objects.create_user("ops", password="pw-for-tests-only")
AlertRule.objects.create(owner=user, name="folds", condition="folded", cooldown_seconds=0,
                         webhook_secret="s" * 64)
"""


def test_a_collector_runs_its_homes_alert_rules(collector: Collector) -> None:
    # auto-compact cut to its first third: the folds of the rest come while it runs.
    second, third = _cut(FIXTURE_HOMES / "auto-compact", collector.home)
    made = run_python("manage.py", "shell", "-c", RULE, env=_env(collector.data_dir))
    assert made.returncode == 0, made.stderr
    collector.start()
    collector.wait_for("the rows", lambda: len(collector.rows()) == 1)
    wait_for_first_look(collector.output, rules=1)  # the folds so far are old to the rule
    before = {f.seq for f in _compactions(collector.home)}
    for path in second:
        for frame in [*second[path], *third[path]]:  # as DSH writes: a moment apart
            with path.open("ab") as handle:
                handle.write(frame)
            time.sleep(0.01)
    after = [f.seq for f in _compactions(collector.home) if f.seq not in before]
    assert after, "the appended frames hold folds"

    def fired() -> list[tuple[object, ...]]:
        sql = "SELECT f.key, d.channel, d.state FROM live_alertfiring f"
        return query_rows(
            collector.data_dir, sql + " JOIN live_alertdelivery d ON d.firing_id = f.id"
        )

    collector.wait_for("one firing per fold", lambda: len(fired()) == len(after))
    time.sleep(1.0)
    assert sorted(fired()) == sorted((str(seq), "browser", "sent") for seq in after)


def test_a_collector_tells_systemd_it_is_ready_once_its_home_is_written(
    collector: Collector,
) -> None:
    shutil.copytree(FIXTURE_HOMES / "auto-compact", collector.home)
    with notify_socket() as systemd:
        collector.extra_env = systemd.env(watchdog_usec=1_000_000)
        collector.start()
        ready = systemd.wait_for("READY=1", WAIT)
        # Ready means written: the web workers read the home's sessions from the database.
        assert set(collector.rows()) == {"auto-compact"}
        systemd.wait_for("WATCHDOG=1", 2, after=ready + 1)  # every half second, while it works
        before = systemd.lines()[:ready]
    assert before[0].startswith("STATUS=not ready: "), before  # what it waited for, first
    assert "READY=1" not in before


def _compactions(home: Path) -> tuple[Any, ...]:
    hub = Hub(home, "sdk")
    hub.cold_start()
    (view,) = hub.view().sessions.values()
    return view.snapshot.ledger.compactions
