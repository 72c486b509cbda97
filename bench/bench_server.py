"""The real dshweb server in a child process, and a client for it, for the benchmarks.

The server is prepared as ``scripts/start`` prepares it (``umask 077``; ``manage.py
migrate``, ``collectstatic`` and ``dshweb_bootstrap``; the benchmark's user made with
``createsuperuser --noinput`` first, so the bootstrap has nothing to do) and run as
``python -m daphne -b 127.0.0.1 -p PORT dshweb.asgi:application`` by the tests' own
:class:`~tests.support.child_server.ChildServer`, from ``tree``: this
checkout by default, or another source tree (e.g. ``git archive HEAD | tar -x -C DIR``
to measure a commit while the work tree changes under you). Its output goes to
``server.log`` in its data folder, whose tail is printed when it fails.

:func:`wait_complete` is "start to first complete page": a server that folds in the
background says so at ``GET /progress/`` (``data-state="folding"`` or ``"done"``), and
only a ``/`` asked for after ``done`` counts; a server without that page (404) is
complete at its first 200 ``/``. Every wait here is bounded by a deadline; nothing
retries for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import http.cookiejar
import re
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import websockets

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the server helper the tests share: tests/support/child_server.py
from tests.support.bytecode import keep_bytecode, user_bytecode_folder  # noqa: E402
from tests.support.child_server import HOST, ChildServer, ServerError, free_port  # noqa: E402

__all__ = ["HOST", "BenchError", "Server", "free_port", "percentile", "wait_complete", "ws_headers"]

USER, PASSWORD = "bench", "bench-password-not-secret"
STOP_TIMEOUT = 20.0
COMMAND_TIMEOUT = 300.0
PROGRESS = "/progress/"
PROGRESS_STATE = re.compile(rb'data-state="(folding|done)"')
POLL_EVERY = 0.2
WS_MAX_SIZE = 2**28
"""The client accepts messages up to 256 MiB, so a refused message is never its doing."""


class BenchError(Exception):
    """The benchmark could not do what it claims; the message says what and why."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    seconds: float
    headers: dict[str, str]

    def server_ms(self) -> float | None:
        """The server's own time from ``Server-Timing`` (``total``/``app`` metric, else
        the largest ``dur``), or None without the header."""
        value = self.headers.get("server-timing")
        if not value:
            return None
        named: dict[str, float] = {}
        for metric in value.split(","):
            parts = [p.strip() for p in metric.split(";")]
            for param in parts[1:]:
                if param.startswith("dur="):
                    with contextlib.suppress(ValueError):
                        named[parts[0]] = float(param[4:].strip('"'))
        for name in ("total", "app"):
            if name in named:
                return named[name]
        return max(named.values()) if named else None


@dataclass(slots=True)
class Server(ChildServer):
    """A :class:`~tests.support.child_server.ChildServer` (the tests' own) with the benchmark's
    user, its session cookie and a timed client."""

    umask: int = 0o077
    stop_timeout: float = STOP_TIMEOUT
    cookie: str | None = None

    def env(self) -> dict[str, str]:
        """The server's environment; it starts as a pip install's does, compiled once
        (:mod:`tests.support.bytecode`)."""
        env = ChildServer.env(self)
        keep_bytecode(env, user_bytecode_folder())
        return env

    def _manage(self, *args: str, extra: dict[str, str] | None = None) -> None:
        try:
            self.manage(*args, env=self.env() | (extra or {}), timeout=COMMAND_TIMEOUT)
        except ServerError as error:
            raise BenchError(str(error)) from None

    def prepare(self) -> None:
        """What scripts/start does before daphne, plus the benchmark's user (made first,
        so the bootstrap has no user to make)."""
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._manage("migrate", "--noinput", "--verbosity", "0")
        self._manage("collectstatic", "--noinput", "--verbosity", "0")
        self._manage(
            "createsuperuser",
            "--noinput",
            extra={
                "DJANGO_SUPERUSER_USERNAME": USER,
                "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
                "DJANGO_SUPERUSER_EMAIL": "bench@example.invalid",
            },
        )
        self._manage("dshweb_bootstrap")

    def start(self, *, wait: bool = False) -> None:
        """Start it; a benchmark times the wait for its first answer itself."""
        ChildServer.start(self, wait=wait)

    def since_start(self) -> float:
        return time.monotonic() - self.started_at

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no server log)"

    def fail(self, message: str) -> BenchError:
        return BenchError(f"{message}\n--- server log (tail) ---\n{self.log_tail()}")

    def wait_answering(self, deadline: float) -> None:
        """Until the login page answers 200, or :class:`BenchError`."""
        try:
            self.wait_ready(deadline)
        except ServerError as error:
            raise self.fail(str(error).split("\n", 1)[0]) from None

    def login(self, timeout: float) -> None:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        url = f"http://{HOST}:{self.port}/accounts/login/"
        opener.open(url, timeout=timeout)
        token = next(c.value for c in jar if c.name == "csrftoken")
        body = urllib.parse.urlencode(
            {"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": token}
        ).encode()
        opener.open(urllib.request.Request(url, body, headers={"Referer": url}), timeout=timeout)
        cookie = next((str(c.value) for c in jar if c.name == "sessionid"), None)
        if cookie is None:
            raise self.fail("signing in gave no session cookie")
        self.cookie = cookie

    def get(self, path: str, *, timeout: float, headers: dict[str, str] | None = None) -> Response:
        """One GET on a fresh connection, timed from connect to the last body byte."""
        headers = dict(headers or {})
        if self.cookie:
            headers["Cookie"] = f"sessionid={self.cookie}"
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            start = time.perf_counter()
            conn.request("GET", path, headers=headers)
            answer = conn.getresponse()
            body = answer.read()
            seconds = time.perf_counter() - start
            found = {k.lower(): v for k, v in answer.getheaders()}
            return Response(answer.status, body, seconds, found)
        finally:
            conn.close()

    def stop(self) -> float:
        """SIGTERM, then wait (kill after :data:`STOP_TIMEOUT`); seconds it took."""
        took = ChildServer.stop(self)
        if took >= self.stop_timeout:
            print(f"bench: the server did not stop within {self.stop_timeout:.0f} s of SIGTERM")
        return took


@dataclass(frozen=True, slots=True)
class Cold:
    boot_s: float
    """Start to the login page's first answer."""
    first_page_s: float
    complete_s: float
    progress: str
    """``endpoint`` when ``/progress/`` said done, ``none`` when it 404s."""


def wait_complete(server: Server, deadline: float) -> Cold:
    """From the server's start: sign in if needed, then poll until a complete ``/``."""
    server.wait_answering(deadline)
    boot = server.since_start()
    if server.cookie is None:
        server.login(timeout=max(1.0, deadline - time.monotonic()))
    first: float | None = None
    last = "nothing"
    while time.monotonic() < deadline:
        left = max(1.0, deadline - time.monotonic())
        progress = server.get(PROGRESS, timeout=left)
        if progress.status in (301, 302):
            server.login(timeout=left)  # the session was lost (e.g. a new secret key)
            continue
        if progress.status == 404:
            state = "none"
        elif progress.status == 200 and (found := PROGRESS_STATE.search(progress.body)):
            state = found.group(1).decode()
        else:
            raise server.fail(
                f"GET {PROGRESS} answered {progress.status} without data-state "
                f'"folding" or "done": {progress.body[:200]!r}'
            )
        if state == "folding" and first is not None:
            time.sleep(POLL_EVERY)
            continue
        page = server.get("/", timeout=max(1.0, deadline - time.monotonic()))
        last = f"/progress/ {state}, / {page.status}"
        if page.status in (301, 302):
            server.login(timeout=left)  # the session was lost (e.g. a new secret key)
            continue
        if page.status == 200:
            at = server.since_start()
            first = at if first is None else first
            if state in ("none", "done"):
                return Cold(boot, first, at, "none" if state == "none" else "endpoint")
        elif page.status != 503:
            raise server.fail(f"GET / answered {page.status} while starting")
        time.sleep(POLL_EVERY)
    raise server.fail(f"no complete / before the deadline (last: {last}; raise --timeout)")


@dataclass(frozen=True, slots=True)
class FirstMessage:
    """What a socket did before its first message: the size, or how it failed."""

    path: str
    size: int | None
    seconds: float
    failure: str | None

    @property
    def outcome(self) -> str:
        return "ok" if self.failure is None else self.failure


def ws_headers(server: Server) -> dict[str, str]:
    """A browser's handshake from this server's own page (dshweb.site.origin)."""
    return {"Cookie": f"sessionid={server.cookie}", "Origin": f"http://{HOST}:{server.port}"}


async def first_message(server: Server, path: str, timeout: float) -> FirstMessage:
    """Open ``path`` and wait (at most ``timeout``) for its first message."""
    url = f"ws://{HOST}:{server.port}{path}"
    start = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            async with websockets.connect(
                url, additional_headers=ws_headers(server), max_size=WS_MAX_SIZE
            ) as ws:
                message = await ws.recv()
        data = message.encode() if isinstance(message, str) else message
        return FirstMessage(path, len(data), time.monotonic() - start, None)
    except TimeoutError:
        return FirstMessage(path, None, time.monotonic() - start, f"no-message-in-{timeout:.0f}s")
    except websockets.ConnectionClosed as closed:
        code = closed.rcvd.code if closed.rcvd is not None else "none"
        return FirstMessage(path, None, time.monotonic() - start, f"closed-{code}")
    except (OSError, websockets.InvalidHandshake) as error:
        name = re.sub(r"\W+", "-", type(error).__name__)
        return FirstMessage(path, None, time.monotonic() - start, f"failed-{name}")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-int(q * 1000) * len(ordered) // 1000))
    return ordered[min(len(ordered), rank) - 1]
