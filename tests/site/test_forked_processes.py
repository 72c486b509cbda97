"""The tests' fork server (tests/support/forkserver.py) runs a command of dshweb as a
process started afresh runs it: the same output, exit code, folder, environment, umask,
session and end by a signal. Each command is run both ways and the answers compared."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support import forkserver
from tests.support.forkserver import Forked

PROBE = (
    "import os, sys; print(os.getcwd(), os.environ['PROBE'], oct(os.umask(0)), "
    "os.getsid(0) == os.getpid(), sys.argv[0], __name__); "
    "print('to stderr', file=sys.stderr); sys.exit(3)"
)


@pytest.fixture(autouse=True)
def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forkserver.SWITCH, "1")
    for name in [n for n in os.environ if n.startswith(("COVERAGE_", "COV_CORE_"))]:
        monkeypatch.delenv(name)  # forked under coverage too: this checks the forking


Answer = tuple[int, str, str]
"""An exit code, then what the process wrote to its standard output and error."""


def _both(argv: list[str], env: dict[str, str]) -> tuple[Answer, Answer]:
    assert forkserver.forkable(argv, REPO, env), argv
    forked = forkserver.run(argv, cwd=REPO, env=env, timeout=60, umask=0o027)
    fresh = subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60, umask=0o027
    )
    return (
        (forked.returncode, forked.stdout, forked.stderr),
        (fresh.returncode, fresh.stdout, fresh.stderr),
    )


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(
        os.environ,
        DSHWEB_DATA_DIR=str(tmp_path / "data"),
        DSH_HOME=str(tmp_path / "home"),
        DSHWEB_NO_DEMO="1",
        PROBE="ok 好",
    )


def test_a_forked_command_answers_as_one_started_afresh(tmp_path: Path) -> None:
    env = _env(tmp_path)
    probe = [sys.executable, "manage.py", "shell", "--no-startup", "-v", "0", "-c", PROBE]
    forked, fresh = _both(probe, env)
    assert forked == fresh
    code, out, err = forked
    assert (code, err) == (3, "to stderr\n")
    assert out == f"{REPO} ok 好 0o27 False manage.py django.core.management.commands.shell\n"
    refused = [sys.executable, "-m", "dshweb", "frobnicate"]
    forked, fresh = _both(refused, env)
    assert forked == fresh
    assert forked[0] == 2
    assert "invalid choice: 'frobnicate'" in forked[2]


def test_it_forks_only_what_runs_the_same(tmp_path: Path) -> None:
    env = _env(tmp_path)
    forked = forkserver.popen(
        [sys.executable, "-m", "dshweb", "--version"], cwd=REPO, env=env, stdout=subprocess.PIPE
    )
    assert isinstance(forked, Forked)
    assert forked.communicate(timeout=30)[0] == b"dshweb 0.1.0\n"
    (tmp_path / "manage.py").write_text("pass\n")  # another tree's
    for argv, cwd, changes in (
        ([sys.executable, "-c", "pass"], REPO, {}),
        ([sys.executable, "-X", "importtime", "-m", "dshweb", "--version"], REPO, {}),
        ([sys.executable, "manage.py", "--version"], tmp_path, {}),
        ([sys.executable, "manage.py", "--version"], REPO, {"PYTHONPATH": str(tmp_path)}),
        ([sys.executable, "manage.py", "--version"], REPO, {forkserver.SWITCH: "0"}),
    ):
        process = forkserver.popen(argv, cwd=cwd, env=env | changes, stdout=subprocess.DEVNULL)
        assert isinstance(process, subprocess.Popen), argv
        assert process.wait(timeout=30) == 0


def test_a_signal_ends_a_forked_child_as_one_started_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _env(tmp_path)
    argv = [sys.executable, "manage.py", "shell", "-c", "import time; time.sleep(60)"]
    ended = []
    for fork in ("1", "0"):
        process = forkserver.popen(
            argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, start_new_session=True
        )
        assert isinstance(process, Forked) == (fork == "1")
        time.sleep(0.5)
        assert process.poll() is None
        assert os.getsid(process.pid) == process.pid  # a session of its own
        process.terminate()
        ended.append(process.wait(timeout=30))
        monkeypatch.setenv(forkserver.SWITCH, "0")
    assert ended == [-signal.SIGTERM, -signal.SIGTERM]


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie not yet reaped has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_a_test_process_killed_leaves_no_forked_child_running(tmp_path: Path) -> None:
    """Killed, a test process tears down no fixture: its fork server ends what it forked."""
    forks = (
        "import subprocess, sys, time\n"
        "from tests.support import forkserver\n"
        "child = forkserver.popen([sys.executable, 'manage.py', 'shell', '-c',"
        " 'import time; time.sleep(120)'], cwd=sys.argv[1], stdout=subprocess.DEVNULL)\n"
        "assert isinstance(child, forkserver.Forked)\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    env = {k: v for k, v in _env(tmp_path).items() if not k.startswith(("COVERAGE_", "COV_CORE_"))}
    test_process = subprocess.Popen(
        [sys.executable, "-c", forks, str(REPO)],
        cwd=REPO,
        env=env | {forkserver.SWITCH: "1"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert test_process.stdout is not None
        child = int(test_process.stdout.readline())
        assert not _gone(child)
    finally:
        test_process.kill()
        test_process.communicate()
    deadline = time.monotonic() + 10
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not _gone(child):
        os.kill(child, signal.SIGKILL)
        pytest.fail(f"the forked child {child} outlived its test process")
