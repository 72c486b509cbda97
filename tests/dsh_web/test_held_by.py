"""Who holds a live session: a ``dsh web`` this process runs (a managed one, or a process
it started) is named, read from the kernel's lock table, so a page can say "held by dsh
web" instead of just "live"; any other holder is not named. The ``dsh`` here is a stand-in
that prints a launch URL and, from a child process of its own as a runtime might, holds a
session's lock as ``dsh web`` does after a Compact."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dshweb.core.fold.index import HomeIndex
from dshweb.dsh_web.managed import (
    DSH_WEB_HOLDER,
    DshWebPhase,
    ManagedDshWeb,
    name_holder,
)
from tests.core.log.test_home import _session

HOLDING_DSH = """#!/bin/sh
# A dsh web that holds $HOLD's lock from a child process, until it is ended.
"{python}" -c '
import fcntl, os, sys, time
lock = open(os.environ["HOLD"], "a")
fcntl.flock(lock, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
' &
child=$!
trap 'kill $child; exit 0' TERM
echo "dsh web: http://127.0.0.1:9/?token=stand-in"
wait $child
"""


def _wait(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _held(folder: Path) -> bool:
    with (folder / "session.lock").open("a") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def test_a_session_held_by_a_managed_dsh_web_is_named_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    folder = _session(home, "--p--", "compacted")
    other = _session(home, "--p--", "someone-elses")
    dsh = tmp_path / "dsh"
    dsh.write_text(HOLDING_DSH.format(python=sys.executable))
    dsh.chmod(0o755)
    monkeypatch.setenv("HOLD", str(folder / "session.lock"))  # ManagedDshWeb passes it on
    index = HomeIndex(home, name_holder=name_holder)
    index.refresh()
    with (other / "session.lock").open("a") as mine:  # this process plays another DSH
        fcntl.flock(mine, fcntl.LOCK_EX)
        with ManagedDshWeb(home, dsh=dsh) as engine:
            assert engine.wait_running(20).phase is DshWebPhase.RUNNING
            _wait(lambda: _held(folder), "the stand-in holds the lock")
            assert index.refresh_liveness() == {folder, other}
            shots = {s.session_id: s for s in index.snapshots()}
            assert (shots["compacted"].live, shots["compacted"].held_by) == (
                True,
                DSH_WEB_HOLDER,
            )
            # dsh_snapshot --json and the API's session detail say so too (their dict).
            assert shots["compacted"].as_json()["heldBy"] == DSH_WEB_HOLDER
            assert (shots["someone-elses"].live, shots["someone-elses"].held_by) == (
                True,
                None,
            )
        # Stopped: the lock is let go, and a holder no longer running is no dsh web.
        _wait(lambda: not _held(folder), "the lock let go")
        assert index.refresh_liveness() == {folder}
        shots = {s.session_id: s for s in index.snapshots()}
        assert (shots["compacted"].live, shots["compacted"].held_by) == (False, None)
        assert shots["someone-elses"].held_by is None


def test_no_managed_dsh_web_names_nobody() -> None:
    assert name_holder(frozenset({os.getpid(), 1, -1})) is None
