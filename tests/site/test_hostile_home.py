"""Nothing in a DSH home can hang a real ``dshweb serve`` (issue 47, item 1): with a
hostile file of each kind at every path it reads, the sessions that are fine are listed
at once, each file is named where it matters (the sessions' settings, the settings
pages, ``dshweb doctor``), and SIGTERM ends the server on time.

On f4ab7dd a FIFO at a profile's patch file or manifest kept the sessions list empty,
``/settings/`` unanswered, SIGTERM without effect and doctor running for ever.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_HOMES
from tests.support.child_server import REPO
from tests.support.hostile_homes import (
    FILES,
    GOOD_SESSIONS,
    HOSTILE_FOLDERS,
    KINDS,
    Kind,
    hostile_home,
)
from tests.support.hostile_homes import release as release_home
from tests.support.server import DshwebServer, serving
from tests.support.unprivileged import without_reading_rights
from tests.support.visitor import Visitor

LISTED_WITHIN = 15.0
NEW_SESSION_WITHIN = 2.0
WATCHES_AT_MOST = 50
"""A link to /usr, followed, was 16,120 watches."""
STOPPED_WITHIN = 10.0
FOLDERS_WITHIN = 5.0
"""From the sessions listed to the folders it cannot read named (the watch's first round)."""
DOCTOR_WITHIN = 60.0


@pytest.fixture(params=list(KINDS), ids=list(KINDS))
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Kind, Path]]:
    kind = KINDS[request.param]
    try:
        home = hostile_home(tmp_path, kind)
    except PermissionError:
        pytest.skip(f"making a {kind.name} needs rights this user lacks")
    yield kind, home
    release_home(home)


def _listed(visitor: Visitor, deadline: float) -> set[str]:
    """The sessions listed once the good ones are (a regular file at the log's place, too
    big or unreadable, is a session whose error says so)."""
    listed: set[str] = set()
    while time.monotonic() < deadline:
        status, body = visitor.get("/api/v1/sessions?per_page=50")
        if status == 200:
            listed = {row["sessionId"] for row in json.loads(body)["sessions"]}
            if listed >= set(GOOD_SESSIONS):
                return listed
        time.sleep(0.1)
    return listed


@pytest.mark.timeout(180)
def test_a_hostile_file_anywhere_hangs_nothing(hostile: tuple[Kind, Path], tmp_path: Path) -> None:
    kind, home = hostile
    server = DshwebServer(home=home, data_dir=tmp_path / "data")
    server.as_dshweb_serve()
    server.wrapper = without_reading_rights([]) if kind.unprivileged else []
    served = serving(server)
    next(served)
    try:
        visitor = Visitor(server)
        started = server.started_at
        listed = _listed(visitor, started + LISTED_WITHIN)
        assert listed - {"log"} == set(GOOD_SESSIONS), server.output(40)
        if "log" in listed:
            status, body = visitor.get("/api/v1/homes/local/sessions/log")
            assert status == 200 and json.loads(body)["errors"], body
        patch = f"{home}/profiles/sdk/cordis.patch.yml {kind.said(FILES[1])}"
        status, body = visitor.get("/api/v1/homes/local/sessions/plain-turns")
        assert status == 200
        assert f"DSH cannot load profile 'sdk': {patch}" in json.loads(body)["errors"][0]
        status, page = visitor.get("/settings/")
        assert status == 200
        for profile in ("sdk", "web"):
            relative = f"profiles/{profile}/cordis.patch.yml"
            assert f"{home}/{relative} {kind.said(relative)}" in page
        if kind.folder_words is not None:
            said = [f"{relative} {kind.folder_words}" for relative in HOSTILE_FOLDERS]
            page = _shown(visitor, "/", said, time.monotonic() + FOLDERS_WITHIN)
            assert [words for words in said if words not in page] == [], page
        assert _inotify_watches(server) < WATCHES_AT_MOST  # never a tree behind a link
        _a_new_session_shows_at_once(visitor, home)
    finally:
        assert server.process is not None
        process = server.process
        stopped = server.stop()
        assert process.returncode is not None and stopped < STOPPED_WITHIN, server.output(40)
    _doctor_names_every_file(kind, home, server)


def _shown(visitor: Visitor, path: str, said: list[str], deadline: float) -> str:
    """The page at ``path`` once it says all of ``said``, or at ``deadline``: the folders
    are named by the hub's watch, set up just after its cold start listed the sessions."""
    while True:
        status, page = visitor.get(path)
        assert status == 200, page
        if all(words in page for words in said) or time.monotonic() >= deadline:
            return page
        time.sleep(0.1)


def _inotify_watches(server: DshwebServer) -> int:
    """The inotify watches the server holds (each ``inotify wd:`` line of its fds)."""
    assert server.process is not None
    fdinfo = Path(f"/proc/{server.process.pid}/fdinfo")
    lines = (line for info in fdinfo.iterdir() for line in _text(info).splitlines())
    return sum(1 for line in lines if line.startswith("inotify wd:"))


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # an fd closed meanwhile
        return ""


def _a_new_session_shows_at_once(visitor: Visitor, home: Path) -> None:
    """The rest of the home stays live: a session DSH starts now is listed within 2 s."""
    source = next((FIXTURE_HOMES / "manual-compact" / "sessions").glob("*/manual-compact"))
    shutil.copytree(source, home / "sessions" / "--later--" / source.name)
    deadline = time.monotonic() + NEW_SESSION_WITHIN
    while source.name not in _listed(visitor, time.monotonic() + 0.5):
        assert time.monotonic() < deadline, "a new session waited for a rescan"
        time.sleep(0.05)


def _doctor_names_every_file(kind: Kind, home: Path, server: DshwebServer) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [*server.wrapper, sys.executable, "-m", "dshweb", "doctor"],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=DOCTOR_WITHIN,
        check=False,
    )
    assert time.monotonic() - started < DOCTOR_WITHIN
    said = " ".join(done.stdout.split())  # its table wraps long lines
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    for relative in FILES[:-1]:  # every file but the log (not a log: not read at all)
        assert f"{home}/{relative} {kind.said(relative)}" in said, (relative, done.stdout)
    if kind.folder_words is not None:
        for relative in HOSTILE_FOLDERS:
            assert f"{home}/{relative} {kind.folder_words}" in said, (relative, done.stdout)
