"""The hub's watch (dshweb/live/watch.py): only the folders the hub reads, never through a
link, an unreadable folder set aside with the rest watched, in a real home on a real
kernel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dshweb.live.watch import HomeWatch, inotify_available, unreadable_folders
from tests.conftest import FIXTURE_HOMES
from tests.support.unprivileged import without_reading_rights

pytestmark = pytest.mark.skipif(not inotify_available(), reason="inotify only")

STEP, LONGEST = 0.005, 0.04
LINK = "is a symbolic link: dshweb follows no link inside a DSH home"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "plain-turns", home)
    return home


def _changes(watch: HomeWatch, seconds: float = 2.0) -> set[Path]:
    """Every path reported within ``seconds``."""
    seen: set[Path] = set()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        batch = watch.wait(left, step=STEP, longest=LONGEST)
        assert batch is not None
        seen |= batch.paths
    return seen


def _folders(home: Path) -> list[Path]:
    """What the hub reads: the home, sessions/, profiles/ and the folders in them."""
    return [
        home,
        *[p for p in home.glob("sessions/**") if p.is_dir()],
        *[p for p in (home / "profiles").glob("*") if p.is_dir()],
    ]


def test_it_watches_each_folder_the_hub_reads_and_reports_only_those(tmp_path: Path) -> None:
    home = _home(tmp_path)
    with HomeWatch(home) as watch:
        assert watch.notified and watch.watches == len(_folders(home)) + 1  # + profiles/
        session = next(home.glob("sessions/*/*"))
        log = next(session.glob("session.v4.jsonl.zstd"))
        with log.open("ab") as grown:
            grown.write(b"x")
        (home / "storages").mkdir(exist_ok=True)
        (home / "storages" / "workspace.json").write_text("{}")  # never read: not told
        (home / "cordis.patch.yml").write_text("[]\n")
        (home / "profiles" / "sdk" / "cordis.yml").write_text("x")  # dsh's, not read
        assert _changes(watch) == {log, home / "cordis.patch.yml"}


def test_new_project_and_session_folders_are_watched_as_they_come(tmp_path: Path) -> None:
    home = _home(tmp_path)
    with HomeWatch(home) as watch:
        session = home / "sessions" / "--new--" / "s1"
        session.mkdir(parents=True)  # both at once: the session appears before its watch
        (session / "session.v4.jsonl.zstd").write_bytes(b"a")
        seen = _changes(watch, 1.0)
        assert session in seen and session.parent in seen
        (session / "session.v4.jsonl.zstd").write_bytes(b"ab")
        assert session / "session.v4.jsonl.zstd" in _changes(watch, 1.0)
        # gone and made again at the same path: the new folder is watched
        shutil.rmtree(session)
        session.mkdir()
        _changes(watch, 0.5)
        (session / "session.lock").write_text("")
        assert session / "session.lock" in _changes(watch, 1.0)
        # moved away: nothing more is told under its old path
        moved = tmp_path / "moved"
        session.rename(moved)
        _changes(watch, 0.5)
        (moved / "session.lock").write_text("again")
        assert not any(p.is_relative_to(session) for p in _changes(watch, 0.5))


def test_a_link_anywhere_in_the_home_is_not_followed(tmp_path: Path) -> None:
    home = _home(tmp_path)
    folders = len(_folders(home)) + 1  # + profiles/
    sessions = home / "sessions"
    (sessions / "--usr--").symlink_to("/usr")  # 16,120 watches when followed
    project = next(p for p in sessions.iterdir() if not p.is_symlink())
    (project / "linked").symlink_to("/usr/share")
    (home / "profiles" / "elsewhere").symlink_to(tmp_path)
    with HomeWatch(home) as watch:
        assert watch.watches == folders  # a link is not a folder
        assert watch.unreadable == {
            sessions / "--usr--": LINK,
            project / "linked": LINK,
            home / "profiles" / "elsewhere": LINK,
        }
    assert unreadable_folders(home) == watch.unreadable


def test_a_profile_file_and_a_plugin_link_are_told(tmp_path: Path) -> None:
    home = _home(tmp_path)
    profile = home / "profiles" / "sdk"
    with HomeWatch(home) as watch:
        (profile / "package.json").write_text(json.dumps({"dsh": {}}))
        modules = profile / "node_modules"
        modules.mkdir()
        _changes(watch, 0.3)
        (modules / "dsh-context-truth").symlink_to(tmp_path)  # as pnpm links a package
        (modules / "@deepseek-ai").mkdir()
        _changes(watch, 0.3)
        (modules / "@deepseek-ai" / "dsh-web-app").symlink_to(tmp_path)
        seen = _changes(watch, 0.5)
    assert modules / "@deepseek-ai" / "dsh-web-app" in seen


def test_wake_ends_a_wait_at_once(tmp_path: Path) -> None:
    with HomeWatch(_home(tmp_path)) as watch:
        threading.Timer(0.1, watch.wake).start()
        started = time.monotonic()
        assert watch.wait(30, step=STEP, longest=LONGEST) is None
        assert time.monotonic() - started < 2


PROBE = """
import sys, time
from pathlib import Path
from dshweb.live.watch import HomeWatch
home = Path(sys.argv[1])

def seen_within(watch, path):
    seen = set()
    deadline = time.monotonic() + 2
    while path not in seen and time.monotonic() < deadline:
        seen |= watch.wait(0.5, step=0.005, longest=0.04).paths
    return path in seen

with HomeWatch(home) as watch:
    print(sorted(f"{p.relative_to(home)} {r}" for p, r in watch.unreadable.items()))
    log = Path(sys.argv[2])
    log.write_bytes(log.read_bytes() + b"x")
    print(seen_within(watch, log))
    log.parent.chmod(0)  # a watched folder closed later: told, and named
    print(seen_within(watch, log.parent), watch.unreadable.get(log.parent))
    log.parent.chmod(0o755)
    print(seen_within(watch, log.parent), watch.unreadable.get(log.parent))
"""


def test_an_unreadable_folder_is_set_aside_and_the_rest_is_watched(tmp_path: Path) -> None:
    home = _home(tmp_path)
    project = next((home / "sessions").iterdir())
    closed = project / "closed"
    closed.mkdir()
    closed_project = home / "sessions" / "--closed--"
    closed_project.mkdir()
    log = next(project.glob("*/session.v4.jsonl.zstd"))
    for folder in (closed, closed_project):
        folder.chmod(0)
    try:
        done = subprocess.run(
            without_reading_rights([sys.executable, "-c", PROBE, str(home), str(log)]),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=Path(__file__).resolve().parents[2],
        )
    finally:
        for folder in (closed, closed_project):
            os.chmod(folder, 0o755)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        str(
            [
                "sessions/--closed-- cannot be read: permission denied",
                f"sessions/{project.name}/closed cannot be read: permission denied",
            ]
        ),
        "True",
        "True cannot be read: permission denied",
        "True None",
    ]
