"""A team's dashboard in the browser: two web workers, two collectors, two homes.

On one real PostgreSQL and one real Redis (``services``): a collector of home ``laptop``
(a copy of fixture sessions) and a collector of home ``server`` (the home of a real
``dsh web`` answered by the fake model, whose launch URL only that collector knows), each
``manage.py dshweb_collect`` in a process of its own; and two Daphne web workers
(``DSHWEB_COLLECT=off``, their ``DSH_HOME`` does not exist) on two ports. A browser on
worker A lists both homes, watches a session of home ``server`` grow and fold, and
presses Compact on it: the press travels through Redis to collector ``server``, which
asks its own ``dsh web``. Worker B shows the same fold.

This module overrides the package's ``server`` fixture with worker A.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.log.home import session_logs
from tests.browser.conftest import SameDocument
from tests.conftest import FIXTURE_HOMES, REPO
from tests.dsh_web.test_client import (
    Setup,
    SlowTurns,
    create,
    engine_setup,
    prompt,
    turns_at_least,
)
from tests.fixtures.dshrun import wait_for_log
from tests.support.server import DshwebServer, ServerError, sign_in, spawn, terminate
from tests.support.stores import shared_stores
from tests.support.visitor import Visitor

pytestmark = [pytest.mark.browser, pytest.mark.dsh, pytest.mark.services]

LAPTOP, SERVER = "laptop", "server"
SESSION = "t-grow"
WAIT_MS = 30_000
"""Longest wait for a change to reach the page (collector write, Redis, worker render)."""
COLLECTED_S = 60.0


@dataclass
class Team:
    engine: Setup
    laptop_home: Path
    workers: tuple[DshwebServer, DshwebServer]
    collector_logs: dict[str, Path]

    def output(self) -> str:
        logs = "".join(
            f"--- collector {name}\n{path.read_text(errors='replace')[-4000:]}\n"
            for name, path in self.collector_logs.items()
        )
        return logs + "".join(worker.output(60) for worker in self.workers)


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


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    root = tmp_path_factory.mktemp("team")
    laptop = root / LAPTOP
    shutil.copytree(FIXTURE_HOMES / "auto-compact", laptop)
    shutil.copytree(
        FIXTURE_HOMES / "subagent-parent" / "sessions", laptop / "sessions", dirs_exist_ok=True
    )
    with (
        shared_stores() as stores,
        engine_setup(tmp_path_factory.mktemp("team-engine"), SlowTurns()) as engine,
    ):
        off = stores | {"DSHWEB_COLLECT": "off"}
        workers = (
            DshwebServer(root / "no-home-a", root / "worker-a", extra_env=dict(off)),
            DshwebServer(root / "no-home-b", root / "worker-b", extra_env=dict(off)),
        )
        logs = {name: root / f"collector-{name}.log" for name in (LAPTOP, SERVER)}
        made = Team(engine, laptop, workers, logs)
        processes = []
        try:
            workers[0].prepare()  # migrates the shared database and makes the user
            workers[1].data_dir.mkdir()
            for name, home, extra in (
                (LAPTOP, laptop, {}),
                (SERVER, engine.home, {"DSHWEB_ENGINE_URL": engine.launch_url}),
            ):
                env = _collector_env(root / f"collector-{name}", stores, extra)
                command = ["manage.py", "dshweb_collect", "--home", str(home), "--name", name]
                run = [sys.executable, *command, "--heartbeat", "1"]
                processes.append(spawn(run, cwd=REPO, env=env, log=logs[name]))
            for worker in workers:
                worker.start()
            _wait_collected(made)
            yield made
        except ServerError as error:
            pytest.fail(f"{error}\n{made.output()}", pytrace=False)
        finally:
            for worker in workers:
                worker.stop()
            for process in processes:
                terminate(process)
        assert engine.token not in made.output()  # the launch token stayed with its collector


def _wait_collected(team: Team) -> None:
    """Until both collectors have written their homes (worker A lists both)."""
    visitor = Visitor(team.workers[0])
    deadline = time.monotonic() + COLLECTED_S
    while time.monotonic() < deadline:
        page = visitor.get("/")[1]
        if f'data-home="{LAPTOP}"' in page and f'data-home="{SERVER}"' in page:
            return
        time.sleep(0.3)
    pytest.fail(f"both homes not collected within {COLLECTED_S} s\n{team.output()}")


@pytest.fixture(scope="module")
def server(team: Team) -> DshwebServer:
    """The package's pages sign in to worker A."""
    return team.workers[0]


def _snapshot(home: Path, session_id: str) -> SessionSnapshot:
    index = HomeIndex(home)
    index.refresh()
    (folder,) = [f for f, t in index.trackers.items() if t.session_id == session_id]
    return index.snapshot(folder)


def test_a_browser_on_worker_a_watches_home_b_grow_fold_and_compacts_it(
    page: Page, team: Team, artifacts: Path
) -> None:
    engine = team.engine
    api = engine.client()
    create(engine, api, SESSION)
    prompt(api, SESSION, "turn 1: " + "words " * 300)
    wait_for_log(engine.home, SESSION, turns_at_least(1), timeout=30)

    # The list: every session of both homes, each row naming its home; a filter by home.
    laptop_ids = {log.session_dir.name for log in session_logs(team.laptop_home)}
    page.goto("/")
    for session_id in laptop_ids:
        row = page.locator(f'li.session-row[data-session-id="{session_id}"]')
        expect(row.locator(".home-name")).to_have_text(LAPTOP)
    expect(page.locator(f'li.session-row[data-session-id="{SESSION}"] .home-name')).to_have_text(
        SERVER, timeout=WAIT_MS
    )
    page.select_option("#filter-home", SERVER)
    expect(page).to_have_url(re.compile(rf"\?home={SERVER}$"))
    expect(page.locator("li.session-row")).to_have_count(1)
    page.screenshot(path=artifacts / "team-list.png", full_page=True)

    # The session of home B, on worker A: it grows as DSH writes, without a reload.
    page.goto(f"/homes/{SERVER}/sessions/{SESSION}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#session-home")).to_have_attribute("data-home", SERVER)
    ring = page.locator("#context-ring")
    one = context_gauge(_snapshot(engine.home, SESSION)).used
    expect(ring).to_have_attribute("data-used", str(one), timeout=WAIT_MS)
    same = SameDocument(page)
    for turn in (2, 3):
        prompt(api, SESSION, f"turn {turn}: " + "words " * 300)
        wait_for_log(engine.home, SESSION, turns_at_least(turn), timeout=30)
    grown = context_gauge(_snapshot(engine.home, SESSION)).used
    assert one is not None and grown is not None and grown > one
    expect(ring).to_have_attribute("data-used", str(grown), timeout=WAIT_MS)

    # Compact, pressed on worker A, run by the collector of home B with its dsh web.
    page.click("#compact-button")
    status = page.locator("#compact-status")
    expect(status).to_have_attribute("data-state", "done", timeout=WAIT_MS)
    snapshot = _snapshot(engine.home, SESSION)
    (compaction,) = [f for f in snapshot.ledger.compactions if f.kind == "manual"]
    after = context_gauge(snapshot).used
    assert compaction.before == grown and after is not None and after < grown, (
        compaction,
        grown,
        after,
    )
    expect(ring).to_have_attribute("data-used", str(after), timeout=WAIT_MS)
    expect(page.locator("#ledger")).to_contain_text("manual", timeout=WAIT_MS)
    same.check()
    page.screenshot(path=artifacts / "team-compacted.png", full_page=True)

    # Worker B, another process, shows the same fold and the same answer.
    browser = page.context.browser
    assert browser is not None
    worker_b = team.workers[1]
    context = browser.new_context(base_url=worker_b.url, storage_state=sign_in(browser, worker_b))
    try:
        again = context.new_page()
        again.goto(f"/homes/{SERVER}/sessions/{SESSION}/")
        expect(again.locator("#context-ring")).to_have_attribute("data-used", str(after))
        expect(again.locator("#compact-status")).to_have_attribute("data-state", "done")
    finally:
        context.close()
