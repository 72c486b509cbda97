"""dshweb's Python processes for the tests, forked from a process that has imported the
libraries they load, instead of started afresh.

A start of dshweb (a server, a collector, a ``manage.py`` command) spends most of its
first second of CPU importing Django, Twisted, pydantic and the rest, the same in every
one of the ~200 processes a run of the suite starts. A fork server, one per test process,
imports them once (:data:`PRELOAD`: libraries only, nothing of dshweb and nothing that
reads Django's settings, installs Twisted's reactor or starts a thread), then forks a
child per command: the child takes its command's standard streams, folder, umask and
environment, and runs ``manage.py`` or ``-m module`` as Python would, its settings and
dshweb itself imported afresh from its own environment. It exits as Python does (threads
joined, ``atexit`` run, streams flushed); the fork server reaps it and sends its exit
status to the test process, whose :class:`Forked` answers as a :class:`subprocess.Popen`.

:func:`popen` and :func:`run` fall back to :mod:`subprocess` for what a fork would not
run the same: another interpreter or folder than this checkout, interpreter options or
variables of its own (``-c``, ``-X``, ``-I``, ``PYTHONPATH``: tests that start Python
without a library on purpose), a coverage run (its tracer starts with a process), and
every process when ``DSHWEB_TEST_FORK`` is not ``1`` (tests/conftest.py sets it unless it
is set: ``DSHWEB_TEST_FORK=0 scripts/test`` starts every process afresh; the benchmarks,
which time starts, never fork). The tests of a start itself (``scripts/start``, an
installed ``dshweb``) run their programs whole either way.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import json
import os
import runpy
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[2]
SWITCH = "DSHWEB_TEST_FORK"
PRELOAD = (
    "django.core.handlers.asgi",
    "django.core.management",
    "django.contrib.admin.sites",
    "django.contrib.staticfiles.finders",
    "django.db.backends.sqlite3.base",
    "django.db.backends.postgresql.base",
    "django.db.migrations.executor",
    "django.db.models",
    "django.template.defaultfilters",
    "django.template.loader_tags",
    "django.views.generic",
    "asgiref.sync",
    "channels.auth",
    "channels.generic.websocket",
    "channels.layers",
    "channels_redis.core",
    "autobahn.twisted.websocket",
    "daphne.http_protocol",
    "daphne.ws_protocol",
    "twisted.internet.asyncioreactor",
    "twisted.internet.endpoints",
    "twisted.web.server",
    "cryptography.x509",
    "OpenSSL.SSL",
    "service_identity",
    "deepseek_harness",
    "dsh_llm_cost",
    "django_htmx.middleware",
    "jsonschema",
    "msgspec",
    "prometheus_client",
    "psycopg",
    "pydantic",
    "redis",
    "ruamel.yaml",
    "watchfiles",
    "whitenoise.middleware",
    "yaml",
    "zstandard",
)
"""What the fork server imports: libraries only (a name that fails to import is left out)."""
_HEADER = struct.Struct("!I")
_STD = (0, 1, 2)
_REPLACED: list[object] = []
"""The fork server's own standard streams, kept from the collector in a child: collected,
they would close the descriptors 0-2 the child's own streams use."""


# --- the test process's side ------------------------------------------------------------


class Forked:
    """A child of the fork server, answering as the :class:`subprocess.Popen` it replaces."""

    def __init__(
        self, channel: socket.socket, pid: int, args: Sequence[str], pipes: dict[int, IO[bytes]]
    ) -> None:
        self._channel = channel
        self.pid = pid
        self.args = list(args)
        self.returncode: int | None = None
        self.stdout = pipes.get(1)
        self.stderr = pipes.get(2)
        self._said = b""
        self._open = True
        self._reading = [stream for stream in (self.stdout, self.stderr) if stream is not None]
        self._read: dict[IO[bytes] | None, list[bytes]] = {stream: [] for stream in self._reading}

    def __del__(self) -> None:
        if self._open:  # never waited for, as a Popen may be
            self._open = False
            self._channel.close()

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()

    def poll(self) -> int | None:
        return self._collect(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._collect(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def _collect(self, timeout: float | None) -> int | None:
        """The exit code once the fork server has sent it (waiting up to ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._channel], [], [], left)[0]:
                return None
            chunk = self._channel.recv(64)
            if not chunk:  # the fork server ended: the child is gone, unreaped by us
                self.returncode = -signal.SIGKILL
            self._said += chunk
            if b"\n" in self._said:
                status = int(self._said.split(b"\n")[0])
                self.returncode = os.waitstatus_to_exitcode(status)
        if self._open:
            self._open = False
            self._channel.close()
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:  # a pid not reaped yet is still this child's
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[bytes, bytes]:
        """What the child wrote to its pipes until it closed them (then closed here), then
        its exit; called again after a timeout, it goes on where it stopped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._reading:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            for stream in select.select(self._reading, [], [], left)[0]:
                chunk = os.read(stream.fileno(), 65536)
                if chunk:
                    self._read[stream].append(chunk)
                else:
                    self._reading.remove(stream)
                    stream.close()
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        self.wait(left)
        return b"".join(self._read.get(self.stdout, [])), b"".join(self._read.get(self.stderr, []))


def _interpreter(environment: Mapping[str, str]) -> dict[str, str]:
    """The variables Python reads as it starts (but the one a child's streams follow)."""
    return {
        name: value
        for name, value in environment.items()
        if name.startswith("PYTHON") and name != "PYTHONUNBUFFERED"
    }


class _Server:
    """This test process's fork server, started at the first fork."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._address = ""
        self._started_with: dict[str, str] | None = None

    @property
    def interpreter(self) -> dict[str, str]:
        """The variables Python read as the fork server started (until it has, this
        process's now: tests/conftest.py changes them as pytest starts)."""
        if self._started_with is None:
            return _interpreter(os.environ)
        return self._started_with

    def connect(self) -> socket.socket | None:
        with self._lock:
            if self._process is None:
                self._start()
            assert self._process is not None
            if self._process.poll() is not None:
                return None
        channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            channel.connect(self._address)
        except OSError:
            channel.close()
            return None
        return channel

    def _start(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="dshweb-fork-")
        self._address = os.path.join(self._folder.name, "socket")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
        self._started_with = _interpreter(env)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forkserver", self._address],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,  # its end: the fork server stops when this process does
            stdout=subprocess.DEVNULL,
            stderr=None,
        )
        deadline = time.monotonic() + 30
        while not os.path.exists(self._address) and time.monotonic() < deadline:
            if self._process.poll() is not None:
                return
            time.sleep(0.01)
        atexit.register(self.stop)

    def stop(self) -> None:
        with self._lock:
            if self._process is not None and self._process.stdin is not None:
                self._process.stdin.close()
                try:
                    self._process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._process.kill()
            if self._folder is not None:
                self._folder.cleanup()


_SERVER = _Server()


def forkable(argv: Sequence[str], cwd: Path | str | None, env: Mapping[str, str] | None) -> bool:
    """Whether ``argv`` runs the same forked: this interpreter on ``manage.py`` or on
    ``-m module`` in this checkout, outside a coverage run."""
    environment = os.environ if env is None else env
    if len(argv) < 2 or argv[0] != sys.executable or Path(cwd or ".").resolve() != REPO:
        return False
    if os.environ.get(SWITCH) != "1" or environment.get(SWITCH, "1") != "1":
        return False
    if any(name.startswith(("COVERAGE_", "COV_CORE_")) for name in (*os.environ, *environment)):
        return False
    if _interpreter(environment) != _SERVER.interpreter:
        return False
    return argv[1] == "manage.py" or (argv[1] == "-m" and len(argv) > 2)


def popen(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | IO[Any] | None = None,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    umask: int = -1,
    start_new_session: bool = False,
) -> Forked | subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, …)``, forked from the fork server when it runs the same
    (:func:`forkable`); ``subprocess.PIPE`` for ``stdout``/``stderr``, ``DEVNULL`` and
    ``STDOUT`` as there."""
    channel = _SERVER.connect() if forkable(argv, cwd, env) else None
    if channel is None:
        return _afresh(argv, cwd, env, (stdin, stdout, stderr), umask, start_new_session)
    given: list[int] = []
    mine: list[int] = []  # descriptors opened here for the child, closed once sent
    pipes: dict[int, IO[bytes]] = {}
    for number, stream in enumerate((stdin, stdout, stderr)):
        if stream is None:
            given.append(number)
        elif stream == subprocess.DEVNULL:
            fd = os.open(os.devnull, os.O_RDWR)
            given.append(fd)
            mine.append(fd)
        elif stream == subprocess.STDOUT and number == 2:
            given.append(given[1])
        elif stream == subprocess.PIPE and number > 0:
            read, write = os.pipe()
            pipes[number] = os.fdopen(read, "rb")
            given.append(write)
            mine.append(write)
        elif isinstance(stream, int):
            given.append(stream)
        else:
            given.append(stream.fileno())
    request = json.dumps(
        {
            "argv": list(argv[1:]),
            "cwd": str(Path(cwd or ".").resolve()),
            "env": dict(os.environ if env is None else env),
            "umask": umask,
            "session": start_new_session,
        }
    ).encode()
    try:
        socket.send_fds(channel, [_HEADER.pack(len(request))], given)
        channel.sendall(request)
        said = b""
        while not said.endswith(b"\n"):
            chunk = channel.recv(1)
            if not chunk:
                raise OSError("the fork server ended")
            said += chunk
    except OSError:  # it ended under us: this one starts afresh
        channel.close()
        for stream in pipes.values():
            stream.close()
        pid = 0
    else:
        pid = int(said)
    finally:
        for fd in mine:
            os.close(fd)
    if not pid:
        return _afresh(argv, cwd, env, (stdin, stdout, stderr), umask, start_new_session)
    return Forked(channel, pid, argv, pipes)


def _afresh(
    argv: Sequence[str],
    cwd: Path | str | None,
    env: Mapping[str, str] | None,
    streams: tuple[int | IO[Any] | None, int | IO[Any] | None, int | IO[Any] | None],
    umask: int,
    start_new_session: bool,
) -> subprocess.Popen[bytes]:
    stdin, stdout, stderr = streams
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        umask=umask,
        start_new_session=start_new_session,
    )


def run(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    check: bool = False,
    umask: int = -1,
    text: bool = True,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(argv, capture_output=True, …)``, forked when it runs the same."""
    process = popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        umask=umask,
    )
    with process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    code = process.wait()
    stdout, stderr = (as_text(said) if text else said for said in (out, err))
    if check and code != 0:
        raise subprocess.CalledProcessError(code, list(argv), stdout, stderr)
    return subprocess.CompletedProcess(list(argv), code, stdout, stderr)


def as_text(said: bytes) -> str:
    """A child's output as ``text=True`` reads it: decoded, its line ends made ``\\n``."""
    return said.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


# --- the fork server's side -------------------------------------------------------------


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # a library missing here: its children import it
            continue
    assert "twisted.internet.reactor" not in sys.modules, "a preload installed the reactor"


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    header, fds, _flags, _address = socket.recv_fds(connection, _HEADER.size, 3)
    (size,) = _HEADER.unpack(header)
    body = b""
    while len(body) < size:
        chunk = connection.recv(size - len(body))
        if not chunk:
            raise OSError("the request ended early")
        body += chunk
    return json.loads(body), fds


def _std_streams(unbuffered: bool) -> None:
    """New standard streams on descriptors 0-2, as Python makes them at its start."""
    encoding = sys.stdout.encoding
    _REPLACED.extend(
        (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
    )
    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding)
    setattr(sys, "stdin", stdin)  # noqa: B010  # sys.__stdin__ is Final to mypy
    setattr(sys, "__stdin__", stdin)  # noqa: B010
    for number, name in ((1, "stdout"), (2, "stderr")):
        raw = io.FileIO(number, "w", closefd=False)
        stream = io.TextIOWrapper(
            raw if unbuffered else io.BufferedWriter(raw),
            encoding,
            errors="backslashreplace" if number == 2 else "strict",
            line_buffering=number == 2 and not unbuffered,
            write_through=unbuffered,
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _child(request: dict[str, Any], fds: list[int], keep_closed: list[int]) -> None:
    """In the forked child: become the command, run it, exit as Python does. Never returns."""
    try:
        _become(request, fds, keep_closed)
        code = _run(request["argv"], request["cwd"])
    except BaseException:  # said as Python's top level says it, exit 1
        try:
            sys.excepthook(*sys.exc_info())
        finally:
            os._exit(1)
    os._exit(code)


def _become(request: dict[str, Any], fds: list[int], keep_closed: list[int]) -> None:
    """Take the command's streams, folder, umask, environment and signals."""
    if request["session"]:
        os.setsid()
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for fd in keep_closed:
        os.close(fd)
    for number, fd in zip(_STD, fds, strict=True):
        os.dup2(fd, number)
    for fd in set(fds) - set(_STD):
        os.close(fd)
    os.chdir(request["cwd"])
    if request["umask"] >= 0:
        os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    _std_streams(bool(os.environ.get("PYTHONUNBUFFERED")))


def _run(argv: list[str], cwd: str) -> int:
    """Run ``manage.py …`` or ``-m module …`` as ``__main__``, then end as Python's own
    exit does (non-daemon threads joined, ``atexit``, streams flushed); its exit code."""
    code = 0
    try:
        if argv[0] == "-m":
            sys.argv = ["-m", *argv[2:]]
            sys.path[0] = cwd
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = str(Path(cwd, argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except KeyboardInterrupt:
        _end()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # died of it, as Python does
    except BaseException:  # as Python's own top level: said, exit 1
        sys.excepthook(*sys.exc_info())
        code = 1
    _end()
    return code


def _end() -> None:
    threading._shutdown()  # type: ignore[attr-defined]  # Python's own wait at its exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def serve(address: str) -> None:
    """Fork a child per connection to ``address``; send each its pid, then its exit status;
    stop when standard input ends (the test process that started it is gone, its fixtures
    perhaps never torn down), ending the children still running."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C ends its children, and then it
    _preload()
    waker_read, waker_write = os.pipe()
    os.set_blocking(waker_read, False)
    os.set_blocking(waker_write, False)
    signal.set_wakeup_fd(waker_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address + ".new")
    listener.listen(64)
    os.rename(address + ".new", address)  # there once it answers
    children: dict[int, socket.socket] = {}
    while True:
        ready = select.select([listener, waker_read, sys.stdin], [], [])[0]
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
            for pid in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            return
        if waker_read in ready:
            while True:
                try:
                    os.read(waker_read, 4096)
                except BlockingIOError:
                    break
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            channel = children.pop(pid, None)
            if channel is not None:
                with contextlib.suppress(OSError):
                    channel.sendall(b"%d\n" % status)
                channel.close()
        if listener in ready:
            connection, _ = listener.accept()
            try:
                request, fds = _receive(connection)
            except (OSError, ValueError):
                connection.close()
                continue
            closed = [listener.fileno(), waker_read, waker_write, connection.fileno()]
            closed += [channel.fileno() for channel in children.values()]
            pid = os.fork()
            if pid == 0:
                _child(request, fds, closed)
            for fd in fds:
                os.close(fd)
            connection.sendall(b"%d\n" % pid)
            children[pid] = connection


if __name__ == "__main__":
    serve(sys.argv[1])
