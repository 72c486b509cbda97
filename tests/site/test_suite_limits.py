"""The suite can always be run: a test that hangs fails at the time limit with every
thread's stack and the run goes on; Ctrl-C stops a run at once. Each checked on a pytest
of its own, with this project's settings, on a test made to hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HANGS = """
import threading
import time


def test_hangs():
    threading.Thread(target=time.sleep, args=(600,), name="stuck-helper", daemon=True).start()
    print("HANGING NOW", flush=True)
    # Short sleeps: a signal that lands between the print and one long sleep's system call
    # would not wake it (CPython checks for signals between bytecodes).
    for _ in range(6000):
        time.sleep(0.1)


def test_after_it():
    assert True
"""


def _pytest(folder: Path, *options: str) -> subprocess.Popen[str]:
    (folder / "test_hang.py").write_text(HANGS)
    settings = ["-c", str(REPO / "pyproject.toml"), "--rootdir", str(folder)]
    test = str(folder / "test_hang.py")
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *settings, "-p", "no:cacheprovider", *options, test],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # As a terminal starts it: a suite started in the background (`cmd &` without job
        # control) ignores SIGINT, and Python then never turns Ctrl-C into KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_every_test_has_a_time_limit() -> None:
    pytest_settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    options = pytest_settings["ini_options"]
    assert 0 < options["timeout"] <= 300 and options["timeout_method"] == "signal"


def test_a_hanging_test_fails_at_the_limit_with_every_thread_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    run = _pytest(tmp_path, "-o", "timeout=3")
    output, _ = run.communicate(timeout=120)
    assert time.monotonic() - started < 60, output
    assert run.returncode == 1, output
    assert "Timeout" in output and "stuck-helper" in output, output  # every thread's stack
    assert "1 failed, 1 passed" in output, output


def test_ctrl_c_stops_a_run(tmp_path: Path) -> None:
    run = _pytest(tmp_path, "-s")
    assert run.stdout is not None
    try:
        seen = ""
        while "HANGING NOW" not in seen:  # started, collected, in the sleeping test
            line = run.stdout.readline()
            assert line, seen
            seen += line
        started = time.monotonic()
        os.killpg(run.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the whole group
        output, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
    output = seen + output
    assert time.monotonic() - started < 10, output
    assert run.returncode == 2, output  # pytest's "interrupted"
    assert "KeyboardInterrupt" in output, output
