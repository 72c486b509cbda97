"""A real dshweb in a child process, for the tests and the benchmarks alike: Daphne on
127.0.0.1 (or another ``manage.py`` command: a collector), its output appended to
``server.log`` in its data folder, stopped with SIGTERM and killed after a timeout.

Plain Python (no pytest, no Playwright, no Django), so ``bench/`` imports it too
(:mod:`bench_server` adds a client; ``tests/support/server.py`` a database per server and
a browser's sign-in). Every wait here is bounded.
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
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import forkserver
from tests.support.forkserver import Forked

Process = subprocess.Popen[bytes] | Forked
"""A child process: started afresh, or forked by the tests' fork server."""

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
APP = "dshweb.asgi:application"
READY_TIMEOUT = 20.0
STOP_TIMEOUT = 5.0
COMMAND_TIMEOUT = 60.0


class ServerError(Exception):
    """The server could not be prepared, or did not answer in time."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def spawn(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    log: Path,
    umask: int = -1,
) -> Process:
    """Start ``command`` in the background, its output and errors appended to ``log``
    (forked when the tests' fork server runs it the same: tests/support/forkserver.py)."""
    with log.open("ab") as output:
        return forkserver.popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            umask=umask,
        )


def terminate(process: Process | None, timeout: float = STOP_TIMEOUT) -> None:
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
class ChildServer:
    home: Path
    data_dir: Path
    port: int = field(default_factory=free_port)
    process: Process | None = None
    starts: int = 0
    extra_env: dict[str, str] = field(default_factory=dict)
    """Set on top of :meth:`env`'s own variables (e.g. ``DSHWEB_ENGINE_URL``)."""
    probe_headers: dict[str, str] = field(default_factory=dict)
    """Sent with the readiness probe (e.g. ``X-Forwarded-Proto`` behind a TLS proxy)."""
    tree: Path = REPO
    """The source tree it runs from: this checkout, or another (a benchmark's baseline)."""
    command: list[str] = field(default_factory=list)
    """What :meth:`start` runs instead of Daphne (``manage.py`` arguments: a collector)."""
    wrapper: list[str] = field(default_factory=list)
    """A program the server runs under (e.g. ``setpriv …``, :mod:`tests.support.unprivileged`)."""
    umask: int = -1
    """The child's umask (-1: this process's; ``scripts/start`` runs with 077)."""
    stop_timeout: float = STOP_TIMEOUT
    started_at: float = 0.0
    """``time.monotonic()`` just before the process was started."""

    def as_dshweb_serve(self) -> None:
        """Run as a person runs it: ``dshweb serve`` (``manage.py dshweb_serve``: bootstrap,
        static files, then Daphne), not Daphne alone."""
        self.command = ["dshweb_serve", "--port", str(self.port)]

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
        env.update(self.extra_env)
        return env

    def manage(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = COMMAND_TIMEOUT
    ) -> None:
        """``manage.py args`` in this server's environment (``env``: instead of it)."""
        done = forkserver.run(
            [sys.executable, "manage.py", *args],
            cwd=self.tree,
            env=env or self.env(),
            timeout=timeout,
            umask=self.umask,
        )
        if done.returncode != 0:
            raise ServerError(
                f"manage.py {' '.join(args)} exited {done.returncode}\n"
                f"--- stdout\n{done.stdout[-3000:]}--- stderr\n{done.stderr[-3000:]}"
            )

    def start(self, *, wait: bool = True) -> None:
        """Start it, and (``wait``) wait until its login page answers."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self.starts += 1
        if self.command:
            command = [sys.executable, "manage.py", *self.command]
        else:
            command = [sys.executable, "-m", "daphne", "-b", HOST, "-p", str(self.port), APP]
        with self.log_path.open("ab") as log:
            log.write(f"=== start {self.starts} on port {self.port}\n".encode())
        self.started_at = time.monotonic()
        self.process = spawn(
            [*self.wrapper, *command],
            cwd=self.tree,
            env=self.env(),
            log=self.log_path,
            umask=self.umask,
        )
        if not wait:
            return
        try:
            self.wait_ready(time.monotonic() + READY_TIMEOUT)
        except BaseException:
            self.stop()
            raise

    def wait_ready(self, deadline: float) -> None:
        """Until the login page answers 200 (the first request of any kind also starts
        the server's background services), or :class:`ServerError`."""
        last_error = "no attempt"
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise ServerError(
                    f"the server exited with {code} before answering\n" + self.output()
                )
            try:
                probe = urllib.request.Request(
                    f"{self.url}/accounts/login/", headers=self.probe_headers
                )
                left = max(0.5, min(2.0, deadline - time.monotonic()))
                with urllib.request.urlopen(probe, timeout=left) as reply:
                    if reply.status == 200:
                        return
                    last_error = f"HTTP {reply.status}"
            except (OSError, urllib.error.URLError) as error:
                last_error = str(error)
            time.sleep(0.1)
        raise ServerError(
            f"the server did not answer /accounts/login/ in time ({last_error})\n" + self.output()
        )

    def stop(self) -> float:
        """SIGTERM, then SIGKILL if it has not exited after :attr:`stop_timeout`; the
        seconds it took."""
        started = time.monotonic()
        process, self.process = self.process, None
        terminate(process, self.stop_timeout)
        return time.monotonic() - started

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

    def cpu_seconds(self) -> float:
        """The child's CPU time so far (user + system)."""
        assert self.process is not None
        stat = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        assert self.process is not None
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        line = next(s for s in status.splitlines() if s.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024
