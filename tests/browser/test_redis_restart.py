"""Redis restarted under a team's dashboard: open pages converge, collectors carry on.

A Redis of this module's own (it keeps nothing, as a restarted Redis does), a real
PostgreSQL database, a collector process of home ``laptop`` (a fixture session cut
short; its ``dsh web`` a port that accepts and never answers) and a web worker process.
With a session page and the sessions list open in Chromium, Redis is stopped and started
again, empty: every group membership and queued message is gone. The rest of the log is
then appended: both pages show the grown session within seconds, without a reload, and a
Compact press after the restart still reaches the collector (it answers "unreachable",
from its engine, which only the collector can say).

This module overrides the package's ``server`` fixture with the worker.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import FIXTURE_HOMES, REPO
from tests.support.homes import (
    Shown,
    append_frames,
    copy_session,
    cut_for_a_visible_change,
    fixture_log,
    shown_after_each_frame,
)
from tests.support.logbuilder import frames_of
from tests.support.redis_server import RedisServer
from tests.support.server import DshwebServer, ServerError, spawn, terminate
from tests.support.stores import shared_stores
from tests.support.visitor import Visitor

pytestmark = [pytest.mark.browser, pytest.mark.services]

HOME = "laptop"
SESSIONS = ("auto-compact", "big-tools")
"""Fixture sessions cut short in the home: one for each restart the test makes."""
CONVERGED_MS = 20_000
"""Longest a page may take to show the state after Redis is back (sockets back off)."""
ANSWER_MS = 30_000
"""Longest for a Compact press to come back failed (the engine never answers)."""


@dataclass
class Cut:
    """A session whose log is cut short: its rest, and what its page shows before and after."""

    log: Path
    rest: list[bytes]
    before: Shown
    after: Shown


@dataclass
class Restarted:
    redis: RedisServer
    worker: DshwebServer
    cuts: dict[str, Cut]
    collector_log: Path


def _collector_env(data_dir: Path, stores: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
    return env | {
        "DSHWEB_DATA_DIR": str(data_dir),
        "DSHWEB_NO_DEMO": "1",
        "DSHWEB_PROFILE": "sdk",
        "DJANGO_SETTINGS_MODULE": "dshweb.settings",
        "PYTHONUNBUFFERED": "1",
        **stores,
        **extra,
    }


def _cut_home(root: Path) -> tuple[Path, dict[str, Cut]]:
    home = root / HOME
    (home / "sessions").mkdir(parents=True)
    shutil.copytree(FIXTURE_HOMES / SESSIONS[0] / "profiles", home / "profiles")
    cuts = {}
    for name in SESSIONS:
        source = fixture_log(name)
        shown = shown_after_each_frame(home / "profiles", source, root / f"scratch-{name}")
        cut = cut_for_a_visible_change(shown, at_least=len(shown) // 3)
        log = copy_session(home, source, frames=cut)
        cuts[name] = Cut(log, frames_of(source.path)[cut:], shown[cut - 1], shown[-1])
    return home, cuts


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarted]:
    root = tmp_path_factory.mktemp("redis-restart")
    home, cuts = _cut_home(root)
    redis = RedisServer(root / "redis")
    redis.start()
    engine = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    engine_url = f"http://127.0.0.1:{engine.getsockname()[1]}/?token=stays-with-the-collector"
    collector = None
    try:
        with shared_stores(redis.url) as stores:
            worker = DshwebServer(
                root / "no-home", root / "worker", extra_env=stores | {"DSHWEB_COLLECT": "off"}
            )
            collector_log = root / "collector.log"
            try:  # whatever fails on the way, both stop before their database goes
                try:
                    worker.prepare()
                    env = _collector_env(
                        root / "collector", stores, {"DSHWEB_ENGINE_URL": engine_url}
                    )
                    command = ["manage.py", "dshweb_collect", "--home", str(home), "--name", HOME]
                    collector = spawn(
                        [sys.executable, *command, "--heartbeat", "1"],
                        cwd=REPO,
                        env=env,
                        log=collector_log,
                    )
                    worker.start()
                    visitor = Visitor(worker)
                    _wait(
                        lambda: all(f'data-session-id="{s}"' in visitor.get("/")[1] for s in cuts)
                    )
                except ServerError as error:
                    pytest.fail(str(error), pytrace=False)
                yield Restarted(redis, worker, cuts, collector_log)
            finally:
                worker.stop()
                terminate(collector)
    finally:
        engine.close()
        redis.stop()


def _wait(ready: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.3)
    pytest.fail(f"not ready within {timeout} s")


@pytest.fixture(scope="module")
def server(restarted: Restarted) -> DshwebServer:
    return restarted.worker


def _open(page: Page, session: str, cut: Cut) -> None:
    page.goto(f"/homes/{HOME}/sessions/{session}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#context-ring")).to_have_attribute("data-used", str(cut.before.gauge.used))


@pytest.mark.parametrize(
    ("session", "down"),
    [(SESSIONS[0], 2.0), (SESSIONS[1], 0.1)],
    ids=["down-2s-frames-meanwhile", "down-0.1s"],
)
def test_open_pages_converge_after_redis_restarts(
    page: Page, restarted: Restarted, session: str, down: float, artifacts: Path
) -> None:
    """Redis stops, frames come meanwhile (a collector's announcements fail), Redis starts
    again empty; once the page's socket is open again, the rest of the log comes: the
    session page and the sessions list show the whole log, pushed through the new Redis."""
    cut = restarted.cuts[session]
    _open(page, session, cut)
    listing = page.context.new_page()
    listing.goto("/")
    expect(listing.locator("#live-status")).to_have_attribute("data-state", "open")
    row = listing.locator(f'li.session-row[data-session-id="{session}"]')
    expect(row).to_have_attribute("data-percent", str(cut.before.gauge.percent))

    half = len(cut.rest) // 2
    restarted.redis.stop()
    append_frames(cut.log, cut.rest[:half])
    time.sleep(down)
    restarted.redis.start()
    for shown in (page, listing):
        expect(shown.locator("#live-status")).to_have_attribute(
            "data-state", "open", timeout=CONVERGED_MS
        )
    append_frames(cut.log, cut.rest[half:])

    after = cut.after.gauge
    ring = page.locator("#context-ring")
    expect(ring).to_have_attribute("data-used", str(after.used), timeout=CONVERGED_MS)
    expect(row).to_have_attribute("data-percent", str(after.percent), timeout=CONVERGED_MS)
    page.screenshot(path=artifacts / f"redis-restart-{session}.png", full_page=True)
    listing.close()


def test_a_command_after_a_restart_still_reaches_the_collector(
    page: Page, restarted: Restarted
) -> None:
    session = SESSIONS[0]
    restarted.redis.restart(down=0.5)
    page.goto(f"/homes/{HOME}/sessions/{session}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    page.click("#compact-button")
    status = page.locator("#compact-status")
    expect(status).to_have_attribute("data-state", "failed", timeout=ANSWER_MS)
    expect(status).to_contain_text("The DSH engine is unreachable")
    log = restarted.collector_log.read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]  # an outage is one line, not a traceback
    assert "stays-with-the-collector" not in restarted.worker.output()
