"""One ``dsh --profile web`` that dshweb owns: started, watched, restarted, stopped.

Contract:

- :meth:`ManagedDshWeb.start` starts a supervisor thread. Each launch runs
  ``dsh --profile web --no-open --host 127.0.0.1 --port <free port>`` in a new process
  session with ``DSH_HOME=home`` and ``DSH_TELEMETRY_MODE=DISABLED`` (always), on top of
  this process's environment and ``env_extra`` (so ``DEEPSEEK_BASE_URL`` and
  ``DEEPSEEK_API_KEY`` pass through).
- The launch URL is read from the line ``dsh web: http://127.0.0.1:<n>/?token=…``.
  :attr:`ManagedDshWeb.launch_url` is a secret, set only while it runs; the kept
  output tail and ``repr()`` have the token blanked out. The token changes with every
  launch, so make a new :class:`DshWebClient` after a restart.
- States: ``starting`` → ``running``; an exit nobody asked for → ``restarting`` (with
  the reason) → a back-off of 1 s doubling to 60 s → ``starting``. The back-off starts
  over after a run that lasted :data:`STABLE_AFTER` seconds. ``failed`` (no restarts)
  when ``dsh`` cannot be found or run. ``stopped`` after :meth:`ManagedDshWeb.stop`.
- :meth:`ManagedDshWeb.stop` ends the process this object started and only it
  (SIGTERM, SIGKILL after a timeout); it is idempotent and also runs at interpreter
  exit. A ``dsh web`` left behind by a killed dshweb keeps its sessions' locks until it
  is ended by hand.
- A session it attached (every ``/compact``) stays attached, its ``session.lock``
  held, until it exits. :func:`name_holder` names such a lock's holder for the pages
  (``"dsh-web"``, when one of this process's managed ``dsh web`` holds it).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

from dshweb.core.said import say
from dshweb.core.settings.dshconfig import find_dsh
from dshweb.dsh_web.client import DshWebClient
from dshweb.installed import add_extra

log = logging.getLogger(__name__)

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
STABLE_AFTER = 60.0
"""A run at least this long resets the back-off to :data:`BACKOFF_FIRST`."""
STARTUP_TIMEOUT = 60.0
"""How long a launch may take to print its URL before it is ended and retried."""
STOP_TIMEOUT = 10.0
"""How long ``stop()`` waits after SIGTERM before SIGKILL (dsh web exits in ~0.1 s)."""
OUTPUT_LINES = 200
DSH_WEB_HOLDER = "dsh-web"
"""What :func:`name_holder` calls a lock held by a managed ``dsh web``."""
ANCESTRY = 4
"""How many parents up a lock's holder may be started by a managed ``dsh web`` (the
``dsh`` launcher replaces itself with the runtime; a runtime may start helpers)."""
_LAUNCH = re.compile(r"dsh web: (http://\S+)")
_TOKEN = re.compile(r"([?&]token=)[^&\s]+")


class DshWebPhase(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class DshWebState:
    """Where the managed ``dsh web`` is; ``reason`` says why when it is not running.

    ``retry_in`` is the back-off (seconds) while ``restarting``; ``restarts`` counts
    launches after the first; ``since`` is the wall-clock time of the change.
    """

    phase: DshWebPhase
    reason: str = ""
    pid: int | None = None
    port: int | None = None
    restarts: int = 0
    retry_in: float | None = None
    since: float = field(default_factory=time.time)


_running: dict[int, int] = {}
"""The process id of each managed ``dsh web`` of this process that runs, by ``id()`` of
its :class:`ManagedDshWeb`."""
_running_lock = threading.Lock()


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:  # "pid (comm) state ppid …": comm may hold spaces and parentheses
        return int(stat[stat.rindex(")") + 2 :].split()[1])
    except (ValueError, IndexError):
        return None


def name_holder(pids: frozenset[int]) -> str | None:
    """:data:`DSH_WEB_HOLDER` when a managed ``dsh web`` of this process (or a process it
    started) is among the ``pids`` holding a lock, else None."""
    with _running_lock:
        ours = set(_running.values())
    if not ours:
        return None
    for pid in pids:
        for _ in range(ANCESTRY):
            if pid in ours:
                return DSH_WEB_HOLDER
            parent = _parent(pid) if pid > 1 else None
            if parent is None:
                break
            pid = parent
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listened on a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _blank_token(line: str) -> str:
    return _TOKEN.sub(r"\1***", line)


def _exit_words(code: int) -> str:
    if code < 0:
        try:
            return say("exit-killed", signal=signal.Signals(-code).name)
        except ValueError:
            return say("exit-signal", number=-code)
    return say("exit-code", code=code)


class ManagedDshWeb:
    """``dsh --profile web`` on ``home``, kept running until :meth:`stop`."""

    def __init__(
        self,
        home: Path,
        *,
        dsh: Path | None = None,
        env_extra: Mapping[str, str] = MappingProxyType({}),
        on_state: Callable[[DshWebState], None] | None = None,
    ) -> None:
        self.home = Path(home)
        self._dsh = dsh
        self._env_extra = dict(env_extra)
        self._on_state = on_state
        self._cond = threading.Condition()
        self._state = DshWebState(DshWebPhase.STOPPED, say("engine-not-started"))
        self._launch_url: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._output: deque[str] = deque(maxlen=OUTPUT_LINES)

    def __repr__(self) -> str:
        state = self.state
        return f"ManagedDshWeb(home={str(self.home)!r}, phase={state.phase}, pid={state.pid})"

    # --- what callers see ---------------------------------------------------------------

    @property
    def state(self) -> DshWebState:
        with self._cond:
            return self._state

    @property
    def launch_url(self) -> str | None:
        """The secret launch URL while it runs, else ``None``."""
        with self._cond:
            return self._launch_url if self._state.phase is DshWebPhase.RUNNING else None

    def client(self, *, timeout: float) -> DshWebClient | None:
        """A client for the current launch (``None`` unless running)."""
        url = self.launch_url
        return DshWebClient(url, timeout=timeout) if url else None

    def output_tail(self) -> list[str]:
        """The last lines ``dsh`` printed (across launches), tokens blanked out."""
        with self._cond:
            return list(self._output)

    def wait_running(self, timeout: float) -> DshWebState:
        """Wait until running (or failed/stopped); returns the state reached or current."""
        settled = (DshWebPhase.RUNNING, DshWebPhase.FAILED, DshWebPhase.STOPPED)
        with self._cond:
            self._cond.wait_for(lambda: self._state.phase in settled, timeout)
            return self._state

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> ManagedDshWeb:
        """Start supervising (once; a stopped one is not started again)."""
        with self._cond:
            if self._stopping.is_set():
                raise RuntimeError("this ManagedDshWeb was stopped; make a new one")
            if self._thread is not None:
                return self
            self._thread = threading.Thread(
                target=self._supervise, name="dsh-web-supervisor", daemon=True
            )
        self._set(DshWebState(DshWebPhase.STARTING, say("engine-launching")))
        atexit.register(self.stop)
        self._thread.start()
        return self

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """End the ``dsh web`` process (only ours) and the supervisor; safe to call again."""
        with self._cond:
            self._stopping.set()
            proc = self._proc
            thread = self._thread
        if proc is not None:
            _terminate(proc, timeout)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout + 5)
        atexit.unregister(self.stop)
        if self.state.phase is not DshWebPhase.STOPPED:
            self._set(DshWebState(DshWebPhase.STOPPED, say("engine-stopped")))

    def __enter__(self) -> ManagedDshWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the supervisor -----------------------------------------------------------------

    def _set(self, state: DshWebState, *, launch_url: str | None = None) -> None:
        with self._cond:
            if self._stopping.is_set() and self._state.phase is DshWebPhase.STOPPED:
                return  # stop() has spoken: nothing the supervisor says afterwards counts
            self._state = state
            self._launch_url = launch_url
            self._cond.notify_all()
        with _running_lock:
            if state.phase is DshWebPhase.RUNNING and state.pid is not None:
                _running[id(self)] = state.pid
            else:
                _running.pop(id(self), None)
        if self._on_state is not None:
            try:
                self._on_state(state)
            except Exception:
                log.exception("dsh web state callback failed")

    def _supervise(self) -> None:
        backoff = BACKOFF_FIRST
        restarts = 0
        while not self._stopping.is_set():
            dsh = self._dsh or find_dsh()
            if dsh is None:
                self._fail(say("engine-no-dsh", install=add_extra("engine")))
                return
            if not self.home.is_dir():
                self._fail(say("engine-no-home", home=self.home))
                return
            port = free_port()
            self._set(
                DshWebState(
                    DshWebPhase.STARTING, say("engine-launching"), port=port, restarts=restarts
                )
            )
            try:
                proc = self._launch(dsh, port)
            except OSError as error:
                self._fail(say("engine-cannot-run", dsh=dsh, error=error.strerror or error))
                return
            if proc is None:
                break
            started = time.monotonic()
            url, reader = self._await_url(proc)
            if url is not None:
                running = DshWebState(
                    DshWebPhase.RUNNING, "", pid=proc.pid, port=port, restarts=restarts
                )
                self._set(running, launch_url=url)
                log.info("dsh web running on 127.0.0.1:%d (pid %d)", port, proc.pid)
                code = proc.wait()
            else:
                code = _terminate(proc, STOP_TIMEOUT) if proc.poll() is None else proc.wait()
            reader.join(timeout=5)
            if proc.stdout is not None:
                proc.stdout.close()
            with self._cond:
                self._proc = None
            if self._stopping.is_set():
                break
            ran = time.monotonic() - started
            if url is None:
                reason = self._startup_failure(code, ran)
            else:
                reason = say("engine-exited-after", exit=_exit_words(code), seconds=f"{ran:.0f}")
            if ran >= STABLE_AFTER:
                backoff = BACKOFF_FIRST
            restarts += 1
            log.warning("%s; restarting in %g s", reason, backoff)
            self._set(
                DshWebState(
                    DshWebPhase.RESTARTING, reason, port=port, restarts=restarts, retry_in=backoff
                )
            )
            if self._stopping.wait(backoff):
                break
            backoff = min(backoff * 2, BACKOFF_MAX)
        self._set(DshWebState(DshWebPhase.STOPPED, say("engine-stopped"), restarts=restarts))

    def _fail(self, reason: str) -> None:
        log.error("dsh web cannot be managed: %s", reason)
        self._set(DshWebState(DshWebPhase.FAILED, reason))

    def _launch(self, dsh: Path, port: int) -> subprocess.Popen[str] | None:
        env = dict(os.environ)
        env.update(self._env_extra)
        env.update(DSH_HOME=str(self.home), DSH_TELEMETRY_MODE="DISABLED")
        argv = [str(dsh), "--profile", "web", "--no-open", "--host", "127.0.0.1"]
        with self._cond:
            if self._stopping.is_set():
                return None
            self._proc = subprocess.Popen(
                [*argv, "--port", str(port)],
                cwd=self.home,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                start_new_session=True,  # a Ctrl-C meant for dshweb must not kill it first
            )
            return self._proc

    def _await_url(self, proc: subprocess.Popen[str]) -> tuple[str | None, threading.Thread]:
        """Read the output (on a thread, to its end) until the launch URL shows."""
        found: list[str] = []
        ready = threading.Event()
        stdout = proc.stdout
        assert stdout is not None

        def pump() -> None:
            for line in stdout:
                match = None if found else _LAUNCH.search(line)
                if match is not None:
                    found.append(match.group(1))
                    ready.set()
                with self._cond:
                    self._output.append(_blank_token(line.rstrip()))
            ready.set()

        reader = threading.Thread(target=pump, name="dsh-web-output", daemon=True)
        reader.start()
        ready.wait(STARTUP_TIMEOUT)
        return (found[0] if found else None), reader

    def _startup_failure(self, code: int, ran: float) -> str:
        if ran >= STARTUP_TIMEOUT:
            return say("engine-no-url-in-time", seconds=f"{STARTUP_TIMEOUT:g}")
        said = [line for line in self.output_tail() if line.startswith("dsh:")]
        errors = [line.strip() for line in self.output_tail() if line.strip().startswith("Error")]
        words = "; ".join([*said[-1:], *errors[-1:]])
        if words:
            return say("engine-exited-early-said", exit=_exit_words(code), output=words)
        return say("engine-exited-early", exit=_exit_words(code))


def _terminate(proc: subprocess.Popen[str], timeout: float) -> int:
    """SIGTERM, then SIGKILL after ``timeout``; returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


__all__ = [
    "DSH_WEB_HOLDER",
    "DshWebPhase",
    "DshWebState",
    "ManagedDshWeb",
    "free_port",
    "name_holder",
]
