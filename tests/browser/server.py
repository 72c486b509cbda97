"""A real dshweb server for the browser tests: Daphne in a child process on 127.0.0.1.

The server is prepared the way a person would: ``manage.py migrate``, a superuser made
by ``manage.py createsuperuser --noinput``, then ``python -m daphne``. Its output goes
to a file, printed in full when it fails to answer in time. ``stop()`` sends SIGTERM and
kills after a timeout; ``start()`` may be called again on the same port (a restart).
A fixture yields from :func:`serving` to run one; :func:`sign_in` signs in through its
login form in a browser.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, StorageState

from tests.conftest import REPO
from tests.stores import database_env

HOST = "127.0.0.1"
APP = "dshweb.asgi:application"
READY_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0
COMMAND_TIMEOUT = 60.0
USERNAME = "tester"
PASSWORD = "browser-tests-only-7Qm2"
SIGN_IN_MS = 10_000


class ServerError(Exception):
    """The server could not be prepared, or did not answer in time."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def spawn(
    command: list[str], *, cwd: Path, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """Start ``command`` in the background, its output and errors appended to ``log``."""
    with log.open("ab") as output:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def terminate(process: subprocess.Popen[bytes] | None, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM, then SIGKILL if ``process`` has not exited after ``timeout``."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


@dataclass(slots=True)
class DshwebServer:
    home: Path
    data_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    extra_env: dict[str, str] = field(default_factory=dict)
    """Set on top of :meth:`env`'s own variables (e.g. ``DSHWEB_ENGINE_URL``)."""
    probe_headers: dict[str, str] = field(default_factory=dict)
    """Sent with the readiness probe (e.g. ``X-Forwarded-Proto`` behind a TLS proxy)."""

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
        env.update(
            DSH_HOME=str(self.home),
            DSHWEB_DATA_DIR=str(self.data_dir),
            DSHWEB_NO_DEMO="1",
            DSHWEB_PROFILE="sdk",
            DJANGO_SETTINGS_MODULE="dshweb.settings",
            PYTHONUNBUFFERED="1",
        )
        env.update(database_env(self.data_dir))
        env.update(self.extra_env)
        return env

    def prepare(self) -> None:
        """Prepare the data folder as ``scripts/start`` does, and the user the tests sign in as."""
        self._manage("dshweb_bootstrap", "--verbosity", "0")
        env = self.env() | {
            "DJANGO_SUPERUSER_USERNAME": USERNAME,
            "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
            "DJANGO_SUPERUSER_EMAIL": "tester@example.invalid",
        }
        self._manage("createsuperuser", "--noinput", env=env)

    def _manage(self, *args: str, env: dict[str, str] | None = None) -> None:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=env or self.env(),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            raise ServerError(
                f"manage.py {' '.join(args)} exited {done.returncode}\n"
                f"--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
            )

    def start(self) -> None:
        """Start Daphne and wait until the login page answers."""
        assert self.process is None, "already running"
        self.starts += 1
        command = [sys.executable, "-m", "daphne", "-b", HOST, "-p", str(self.port), APP]
        with self.log_path.open("ab") as log:
            log.write(f"=== start {self.starts} on port {self.port}\n".encode())
        self.process = spawn(command, cwd=REPO, env=self.env(), log=self.log_path)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        last_error = "no attempt"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServerError(
                    f"the server exited with {self.process.returncode} before answering\n"
                    + self.output()
                )
            try:
                probe = urllib.request.Request(
                    f"{self.url}/accounts/login/", headers=self.probe_headers
                )
                with urllib.request.urlopen(probe, timeout=2) as reply:
                    if reply.status == 200:
                        return
                    last_error = f"HTTP {reply.status}"
            except (OSError, urllib.error.URLError) as error:
                last_error = str(error)
            time.sleep(0.1)
        raise ServerError(
            f"the server did not answer /accounts/login/ within {READY_TIMEOUT:.0f} s "
            f"({last_error})\n" + self.output()
        )

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited after ``STOP_TIMEOUT``."""
        process, self.process = self.process, None
        terminate(process)

    def restart(self) -> None:
        self.stop()
        self.start()

    def output(self, lines: int | None = None) -> str:
        """What the server printed so far (the last ``lines`` only), for a failure message."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            text = "(no output)\n"
        if lines is not None:
            text = "".join(text.splitlines(keepends=True)[-lines:])
        return f"--- server output ({self.log_path})\n{text}--- end of server output"


def serving(server: DshwebServer) -> Iterator[DshwebServer]:
    """Prepare and start ``server`` for a fixture (its output on failure), then stop it."""
    try:
        server.prepare()
        server.start()
    except ServerError as error:
        pytest.fail(str(error), pytrace=False)
    yield server
    server.stop()


def sign_in(browser: Browser, server: DshwebServer) -> StorageState:
    """Sign in as ``USERNAME`` through ``server``'s login form; the cookies it set."""
    context = browser.new_context(base_url=server.url)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("#login button[type=submit]")
    page.wait_for_url(f"{server.url}/", timeout=SIGN_IN_MS)
    assert page.locator("#sessions").count() == 1, page.content()[:500]
    state = context.storage_state()
    context.close()
    return state
