"""The live demo glue (dshweb.demo.home): a writable copy of the bundled home, and one
replay thread into it that logs its errors, keeps trying, and stops when told."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dshweb.core.log.home import session_logs
from dshweb.demo import home as demo
from dshweb.demo.home import ensure_demo_home, start_demo_replay, stop_demo_replay

WAIT = 10.0


def _eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture(autouse=True)
def _no_replay_left() -> Iterator[None]:
    yield
    stop_demo_replay()


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def bundled(tmp_path: Path) -> Iterator[Path]:
    """A stand-in for the package's demo home; it must come out of every test unchanged."""
    copy = tmp_path / "bundled"
    shutil.copytree(demo.BUNDLED_HOME, copy)
    before = _tree(copy)
    yield copy
    stop_demo_replay()
    assert _tree(copy) == before


def test_bundled_home_is_copied_once(tmp_path: Path, bundled: Path) -> None:
    target = tmp_path / "data" / "demo-home"
    assert ensure_demo_home(target, bundled) == target
    names = sorted(str(log.path.relative_to(target)) for log in session_logs(target))
    assert names == sorted(str(log.path.relative_to(bundled)) for log in session_logs(bundled))
    marker = target / "sessions" / "mine"
    marker.mkdir()
    assert ensure_demo_home(target, bundled) == target
    assert marker.is_dir()  # an existing copy is left as it is
    assert not list(tmp_path.glob("data/.*.tmp"))


def test_replay_runs_once_into_the_copy_and_stops(tmp_path: Path, bundled: Path) -> None:
    home = ensure_demo_home(tmp_path / "home", bundled)
    before = {log.path for log in session_logs(home)}
    thread = start_demo_replay(home)
    assert thread is not None and thread.daemon
    assert start_demo_replay(home) is None  # idempotent while one runs
    assert _eventually(lambda: len(session_logs(home)) == len(before) + 1)
    (log,) = [log for log in session_logs(home) if log.path not in before]
    assert log.session_dir.name == "demo-live"
    started = time.monotonic()
    stop_demo_replay()
    assert not thread.is_alive()
    assert time.monotonic() - started < 1.0
    again = start_demo_replay(home)  # a stopped replay can be started again
    assert again is not None and again is not thread


def test_the_bundled_home_is_never_replayed_into(bundled: Path) -> None:
    assert start_demo_replay(bundled, bundled=bundled) is None


def test_errors_are_logged_and_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "BACKOFF", (0.01, 0.02))
    caplog.set_level(logging.ERROR, logger="dshweb.demo.home")
    thread = start_demo_replay(tmp_path / "home", source=tmp_path / "missing.zstd")
    assert thread is not None
    assert _eventually(lambda: len(caplog.records) >= 3)  # it keeps trying
    assert thread.is_alive()
    assert all(r.exc_info is not None for r in caplog.records)
    stop_demo_replay()
    assert not thread.is_alive()
