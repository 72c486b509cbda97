"""dshweb.dsh_web: DSH's web API from outside, and the ``dsh web`` that dshweb manages.

Tests without the marker need no DSH: launch-URL checks, a closed port, a plain HTTP
server, and a stub that answers like ``dsh web`` where the real one cannot be made to
(a cookie refused after login). Tests marked ``dsh`` run the real program on a
temporary DSH home against the fake model (tests/fixtures/fakemodel.py); they are
skipped only when no ``dsh`` can be found.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import http.server
import json
import os
import re
import signal
import socket
import stat
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from dshweb.core.log.home import encode_segment, is_live, locked_files
from dshweb.core.said import say
from dshweb.core.settings.dshconfig import find_dsh
from dshweb.dsh_web import client as client_module
from dshweb.dsh_web import managed as managed_module
from dshweb.dsh_web.client import (
    ABANDONED_BY_DSH,
    NO_COMMAND,
    UNEXPECTED,
    CompactOutcome,
    CompactStatus,
    ConnectionStatus,
    DshWebClient,
    LaunchUrlError,
    RpcError,
    TokenRejected,
)
from dshweb.dsh_web.managed import DshWebPhase, DshWebState, ManagedDshWeb, free_port
from tests.conftest import REPO
from tests.fixtures.fakemodel import FakeModel, ModelRequest, Reply, directive_script, text

if TYPE_CHECKING:  # the SDK behind dshrun is needed only where dsh is
    from tests.fixtures.dshrun import SessionLog

ENGINE = REPO / "dshweb" / "dsh_web"
ABANDONED = say(ABANDONED_BY_DSH, problem="")
"""What a timed-out compaction's text ends with (``; dsh web abandons …``)."""
TOKEN = "s3cret-Token_value"
BUSY_TEXT = (
    "Compaction is unavailable because this process has an active compaction, "
    "or the agent is not idle."
)
COMPACTED = re.compile(r"Compacted \d+ history items \(~\d+ tokens\)\.")


def url(port: int, token: str = TOKEN) -> str:
    return f"http://127.0.0.1:{port}/?token={token}"


# --- no dsh needed ------------------------------------------------------------------------


def test_the_engine_package_imports_no_framework() -> None:
    imported: list[str] = []
    modules = sorted(ENGINE.glob("*.py"))
    assert {m.name for m in modules} >= {"client.py", "managed.py"}
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.append(node.module)
    roots = {name.split(".")[0] for name in imported}
    assert not roots & {"django", "channels", "daphne", "django_htmx"}
    assert "dshweb.dsh_web.client" in imported  # the walk sees its imports
    # Only the core, itself and dshweb.installed (plain Python: which tool installed
    # dshweb, for the install hint): no app of dshweb's.
    assert [n for n in imported if n.startswith("dshweb.")] == [
        n
        for n in imported
        if n.startswith(("dshweb.core.", "dshweb.dsh_web.")) or n == "dshweb.installed"
    ]
    hint = ast.parse((ENGINE.parent / "installed.py").read_text(encoding="utf-8"))
    its = {a.name for n in ast.walk(hint) if isinstance(n, ast.Import) for a in n.names}
    its |= {n.module or "" for n in ast.walk(hint) if isinstance(n, ast.ImportFrom)}
    assert its == {"__future__", "sys", "enum", "pathlib"}


@pytest.mark.parametrize(
    ("launch", "message"),
    [
        (f"https://127.0.0.1:1/?token={TOKEN}", "plain HTTP on loopback), not https"),
        (f"ftp://127.0.0.1:1/?token={TOKEN}", "plain HTTP on loopback), not ftp"),
        (f"127.0.0.1:1/?token={TOKEN}", "must start with http://"),
        (f"http://example.com:1/?token={TOKEN}", "must be loopback (127.0.0.1, ::1 or localhost)"),
        (f"http://10.0.0.1:1/?token={TOKEN}", "must be loopback"),
        (f"http://0.0.0.0:1/?token={TOKEN}", "must be loopback"),
        ("http://127.0.0.1:1/", "has no ?token="),
        ("http://127.0.0.1:1/?token=", "has no ?token="),
        (f"http://127.0.0.1:99999/?token={TOKEN}", "malformed"),
    ],
)
def test_only_a_loopback_http_launch_url_is_accepted(launch: str, message: str) -> None:
    with pytest.raises(LaunchUrlError, match=re.escape(message)) as caught:
        DshWebClient(launch, timeout=1)
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize(
    ("launch", "base"),
    [
        (url(8123), "http://127.0.0.1:8123"),
        (f"http://localhost:8123/?token={TOKEN}", "http://localhost:8123"),
        (f"http://[::1]:8123/?token={TOKEN}", "http://[::1]:8123"),
        (f"  http://127.0.0.2:8123/?token={TOKEN}\n", "http://127.0.0.2:8123"),
    ],
)
def test_repr_shows_where_but_never_the_token(launch: str, base: str) -> None:
    client = DshWebClient(launch, timeout=1)
    assert client.base_url == base
    assert repr(client) == f"DshWebClient({base}, token=***)"
    assert TOKEN not in repr(client)


def test_a_closed_port_is_unreachable() -> None:
    client = DshWebClient(url(free_port()), timeout=2)
    check = client.check()
    assert check.status is ConnectionStatus.UNREACHABLE and not check.ok
    assert "Connection refused" in check.detail and TOKEN not in check.detail
    outcome = client.compact("s-1")
    assert outcome.status is CompactStatus.UNREACHABLE
    assert outcome.text.startswith("cannot connect to http://127.0.0.1:")
    assert TOKEN not in outcome.text


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Callable[[type[http.server.BaseHTTPRequestHandler]], int]]:
    """Start handlers on free loopback ports; returns their ports; all are shut down."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(handler: type[http.server.BaseHTTPRequestHandler]) -> int:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_plain_http_server_is_not_dsh(
    serve: Callable[[type[http.server.BaseHTTPRequestHandler]], int],
) -> None:
    client = DshWebClient(url(serve(_Quiet)), timeout=5)
    check = client.check()
    assert check.status is ConnectionStatus.NOT_DSH
    assert "answered the token login with HTTP 200, not dsh web's 303 and cookie" in check.detail
    outcome = client.compact("s-1")
    assert (outcome.status, outcome.code) == (CompactStatus.ENGINE_ERROR, UNEXPECTED)
    assert TOKEN not in check.detail + outcome.text


class _DshLike(http.server.BaseHTTPRequestHandler):
    """Logs in like ``dsh web``; the API part is set per test (class attributes)."""

    protocol_version = "HTTP/1.1"
    logins: list[str]
    api_status = 200
    api_body: Callable[[dict[str, Any]], bytes] = staticmethod(lambda request: b"")

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path != f"/?token={TOKEN}":
            self._answer(401, b"dsh web authentication required")
            return
        self.logins.append(self.path)
        cookie = f"dsh-auth-x=v{len(self.logins)}; Path=/; HttpOnly"
        self._answer(303, b"", {"location": "./", "set-cookie": cookie})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self._answer(type(self).api_status, type(self).api_body(request))


def dsh_like(**attributes: Any) -> type[_DshLike]:
    return type("Handler", (_DshLike,), {"logins": [], **attributes})


def test_a_refused_cookie_logs_in_again_once_then_is_token_rejected(
    serve: Callable[[type[http.server.BaseHTTPRequestHandler]], int],
) -> None:
    handler = dsh_like(api_status=401, api_body=staticmethod(lambda request: b"unauthorized"))
    client = DshWebClient(url(serve(handler)), timeout=5)
    outcome = client.compact("s-1")
    assert outcome.status is CompactStatus.TOKEN_REJECTED
    assert outcome.text == "commands/execute: dsh web refused the session cookie (HTTP 401)"
    assert len(handler.logins) == 2
    check = client.check()
    assert check.status is ConnectionStatus.TOKEN_REJECTED and len(handler.logins) == 4


@pytest.mark.parametrize(
    ("set_cookies", "sent"),
    [
        (  # as dsh web writes it, after a cookie of someone else's
            [
                "theme=dark; Path=/",
                "dsh-auth-7f=a.b/c==; Max-Age=86400; Path=/; "
                "Expires=Thu, 31 Dec 2099 00:00:00 GMT; HttpOnly; SameSite=Strict",
            ],
            "dsh-auth-7f=a.b/c==",
        ),
        (["dsh-auth-x=v; Path=/; HttpOnly; SameSite=Strict; Partitioned"], "dsh-auth-x=v"),
        (["theme=dark", "dsh-auth-x; Path=/"], None),
    ],
    ids=["dsh-web", "unknown-flag", "none-of-ours"],
)
def test_the_session_cookie_is_found_among_the_set_cookie_lines(
    serve: Callable[[type[http.server.BaseHTTPRequestHandler]], int],
    set_cookies: list[str],
    sent: str | None,
) -> None:
    received: list[str | None] = []

    class Handler(_DshLike):
        def do_GET(self) -> None:
            self.send_response(303)
            for cookie in set_cookies:
                self.send_header("set-cookie", cookie)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            received.append(self.headers["cookie"])
            request = json.loads(self.rfile.read(int(self.headers["content-length"])))
            self._answer(200, envelope(request, {"ok": True, "value": []}))

    client = DshWebClient(url(serve(Handler)), timeout=5)
    if sent is None:
        with pytest.raises(TokenRejected, match="303 without a dsh-auth cookie"):
            client.rpc("session/list", {})
        return
    assert client.rpc("session/list", {}) == []
    assert received == [sent]


def envelope(request: dict[str, Any], result: dict[str, Any]) -> bytes:
    answer = {"type": "server-response", "rpcId": request["rpcId"], "result": result}
    return json.dumps(answer).encode()


@pytest.mark.parametrize(
    ("result", "status", "code", "words"),
    [
        (
            {"ok": True, "value": {"commandId": "cmd-1", "result": {"kind": "error"}}},
            CompactStatus.ENGINE_ERROR,
            None,
            "/compact ended as 'error'",
        ),
        ({"ok": True}, CompactStatus.ENGINE_ERROR, NO_COMMAND, "has no /compact command"),
        (
            {"ok": False, "error": {"code": "session/not-found", "message": 'session "s-1" …'}},
            CompactStatus.ENGINE_ERROR,
            "session/not-found",
            'session "s-1" …',
        ),
        ({"value": 1}, CompactStatus.ENGINE_ERROR, UNEXPECTED, "not a DSH server-response"),
    ],
)
def test_compact_classifies_answers_real_dsh_gives_rarely(
    serve: Callable[[type[http.server.BaseHTTPRequestHandler]], int],
    result: dict[str, Any],
    status: CompactStatus,
    code: str | None,
    words: str,
) -> None:
    handler = dsh_like(api_body=staticmethod(lambda request: envelope(request, result)))
    outcome = DshWebClient(url(serve(handler)), timeout=5).compact("s-1")
    assert (outcome.status, outcome.code) == (status, code)
    assert words in outcome.text


def test_a_slow_answer_is_a_timeout(
    serve: Callable[[type[http.server.BaseHTTPRequestHandler]], int],
) -> None:
    def slow(request: dict[str, Any]) -> bytes:
        time.sleep(1.0)
        return envelope(request, {"ok": True})

    handler = dsh_like(api_body=staticmethod(slow))
    outcome = DshWebClient(url(serve(handler)), timeout=5).compact("s-1", timeout=0.3)
    assert outcome.status is CompactStatus.TIMEOUT
    assert outcome.text.endswith(f"did not answer within 0.3 s{ABANDONED}")


def test_an_engine_that_cannot_be_run_fails_without_restarting(tmp_path: Path) -> None:
    engine = ManagedDshWeb(tmp_path, dsh=tmp_path / "no-such-dsh").start()
    try:
        state = engine.wait_running(10)
        assert state.phase is DshWebPhase.FAILED
        assert state.reason.startswith(f"cannot run {tmp_path / 'no-such-dsh'}:")
        assert engine.launch_url is None and engine.client(timeout=1) is None
    finally:
        engine.stop()
    assert engine.state.phase is DshWebPhase.STOPPED


def test_a_launch_that_dies_is_retried_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "dsh"
    fake.write_text("#!/bin/sh\necho 'dsh: startup failed: boom'\necho 'Error: listen'\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(managed_module, "BACKOFF_FIRST", 0.05)
    seen: list[DshWebState] = []
    with ManagedDshWeb(tmp_path, dsh=fake, on_state=seen.append) as engine:
        deadline = time.monotonic() + 10
        while sum(s.phase is DshWebPhase.RESTARTING for s in seen) < 3:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert engine.output_tail()[:2] == ["dsh: startup failed: boom", "Error: listen"]
    restarting = [s for s in seen if s.phase is DshWebPhase.RESTARTING]
    assert restarting[0].reason == (
        "dsh web exited with code 3 before printing its URL: "
        "dsh: startup failed: boom; Error: listen"
    )
    assert [s.retry_in for s in restarting[:3]] == [0.05, 0.1, 0.2]
    assert [s.restarts for s in restarting[:3]] == [1, 2, 3]
    assert seen[-1].phase is DshWebPhase.STOPPED


# --- the real dsh web -----------------------------------------------------------------


class SlowTurns:
    """The directive script, except that a ``!slow`` prompt is answered once the test
    says so (:meth:`release`): the turn stays open however slow the machine is."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self._release = threading.Event()

    def slow_turn(self) -> None:
        """Before a ``!slow`` prompt: its answer waits for :meth:`release`."""
        self.arrived.clear()
        self._release.clear()

    def release(self) -> None:
        self._release.set()

    def __call__(self, request: ModelRequest) -> Reply:
        if request.last_user_text.startswith("!slow") and not request.after_tool_result:
            self.arrived.set()
            return dataclasses.replace(text("slow answer"), hold=self._release)
        return directive_script(request)


@dataclasses.dataclass
class Setup:
    home: Path
    workspace: Path
    fake: FakeModel
    script: SlowTurns
    engine: ManagedDshWeb

    @property
    def launch_url(self) -> str:
        launch = self.engine.launch_url
        assert launch is not None, self.engine.state
        return launch

    @property
    def token(self) -> str:
        return self.launch_url.split("token=", 1)[1]

    def client(self, timeout: float = 30) -> DshWebClient:
        return DshWebClient(self.launch_url, timeout=timeout)


@pytest.fixture(scope="module")
def dsh() -> Path:
    found = find_dsh()
    if found is None:
        pytest.skip(
            "no `dsh` on PATH or beside this Python: pip install deepseek-harness-sdk==0.2.1rc2"
        )
    return found


@contextlib.contextmanager
def engine_setup(root: Path, script: SlowTurns) -> Iterator[Setup]:
    """A real ``dsh web`` (managed) on an empty home under ``root``, answered by the fake
    model through ``script``; skips when there is no ``dsh``."""
    dsh = find_dsh()
    if dsh is None:
        pytest.skip(
            "no `dsh` on PATH or beside this Python: pip install deepseek-harness-sdk==0.2.1rc2"
        )
    home, workspace = root / "home", root / "ws"
    home.mkdir()
    workspace.mkdir()
    with FakeModel(script) as fake, ManagedDshWeb(home, dsh=dsh, env_extra=fake.env()) as engine:
        state = engine.wait_running(60)
        assert state.phase is DshWebPhase.RUNNING, (state, engine.output_tail())
        yield Setup(home, workspace, fake, script, engine)
        assert fake.errors == []


@pytest.fixture(scope="module")
def setup(dsh: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with engine_setup(tmp_path_factory.mktemp("engine"), SlowTurns()) as ready:
        yield ready


def session_dir(home: Path, session_id: str) -> Path:
    (found,) = home.glob(f"sessions/*/{encode_segment(session_id)}")
    return found


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def settled_bytes(folder: Path, *, quiet: float = 0.4, timeout: float = 10) -> dict[str, bytes]:
    """The folder's files once nothing has changed for ``quiet`` s (DSH flushes in ~200 ms)."""
    deadline = time.monotonic() + timeout
    current = folder_bytes(folder)
    while True:
        time.sleep(quiet)
        latest = folder_bytes(folder)
        if latest == current:
            return latest
        assert time.monotonic() < deadline, f"{folder} keeps changing"
        current = latest


def turns_at_least(count: int) -> Callable[[SessionLog], bool]:
    return lambda log: log.count("turn/end") >= count


def prompt(client: DshWebClient, session_id: str, words: str) -> None:
    request = {
        "requestId": f"r-{time.monotonic_ns()}",
        "sessionId": session_id,
        "mode": "queue",
        "content": [{"type": "text", "text": words}],
    }
    assert client.rpc("session/prompt", {"request": request})["accepted"] is True


def create(setup: Setup, client: DshWebClient, session_id: str) -> None:
    request = {"cwd": str(setup.workspace), "sessionId": session_id}
    created = client.rpc("session/create", {"request": request})
    assert created == {"sessionId": session_id, "agentPreset": "standard"}


@contextlib.contextmanager
def sdk_harness(setup: Setup) -> Iterator[Any]:
    """An SDK harness (``sdk`` profile) on the setup's home.

    The SDK leaves its runtime's stdout/stderr pipes to the garbage collector: they are
    collected here, where their ResourceWarning is expected and not ours.
    """
    from tests.fixtures.dshrun import open_harness

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        with open_harness(home=setup.home, cwd=setup.workspace, base_url=setup.fake.base_url) as h:
            yield h
        gc.collect()


@pytest.fixture(scope="module")
def sdk_session(setup: Setup) -> str:
    """A session an SDK harness wrote and closed: on disk, attached to no process."""
    with sdk_harness(setup) as harness:
        assert harness.start_session("sdk-1").run("hello").finish_reason == "completed"
    return "sdk-1"


@pytest.mark.dsh
def test_check_lists_sessions_without_attaching_any(setup: Setup, sdk_session: str) -> None:
    folder = session_dir(setup.home, sdk_session)
    before = settled_bytes(folder)
    check = setup.client().check()
    assert check.status is ConnectionStatus.REACHABLE, check
    assert check.sessions is not None and check.sessions >= 1
    assert check.detail == f"DSH answered; it lists {check.sessions} sessions"
    time.sleep(0.5)  # DSH flushes within ~200 ms: anything written would show by now
    assert folder_bytes(folder) == before
    assert not is_live(folder, locked_files())


@pytest.mark.dsh
def test_compact_of_a_session_another_process_holds_is_owned_elsewhere(
    setup: Setup, sdk_session: str
) -> None:
    folder = session_dir(setup.home, sdk_session)
    with sdk_harness(setup) as harness:
        harness.resume_session(sdk_session).run("the sdk holds the session now")
        assert is_live(folder, locked_files())
        before = settled_bytes(folder)
        outcome = setup.client().compact(sdk_session)
        assert folder_bytes(folder) == before
    assert outcome.status is CompactStatus.OWNED_ELSEWHERE
    assert outcome.code == "session/writer-held"
    assert outcome.text == f'session "{sdk_session}" is already owned by an active write handle'
    assert outcome.details == {"sessionId": sdk_session}


@pytest.mark.dsh
def test_compact_after_a_few_turns_is_done_and_logged(setup: Setup) -> None:
    from tests.fixtures.dshrun import wait_for_log

    client = setup.client()
    create(setup, client, "s-compact")
    for turn in (1, 2, 3):
        prompt(client, "s-compact", f"turn {turn}: " + "words " * 400)
        wait_for_log(setup.home, "s-compact", turns_at_least(turn), timeout=30)
    outcome = client.compact("s-compact")
    assert outcome.status is CompactStatus.DONE, outcome
    assert COMPACTED.fullmatch(outcome.text) and outcome.command_id is not None
    assert outcome.elapsed < 10

    log = wait_for_log(setup.home, "s-compact", lambda log: log.count("command/done") >= 1)
    run = next(
        e for e in log.of_type("command/run") if e["data"]["commandId"] == outcome.command_id
    )
    assert run["data"]["name"] == "compact"
    (start,) = log.of_type("compaction/start")
    (summary,) = log.of_type("compaction/summary")
    (end,) = log.of_type("compaction/end")
    (done,) = log.of_type("command/done")
    assert start["data"]["sourceCommandId"] == outcome.command_id
    assert start["data"]["turn"] is None and "error" not in end["data"]
    assert end["data"]["compactionId"] == start["data"]["compactionId"]
    assert run["seq"] < start["seq"] < summary["seq"] < end["seq"] < done["seq"]
    assert outcome.source_event_seq == summary["seq"]
    assert done["data"] == {
        "commandId": outcome.command_id,
        "kind": "success",
        "text": outcome.text,
        "sourceEventSeq": outcome.source_event_seq,
    }


@pytest.mark.dsh
def test_compact_while_a_turn_is_in_flight_is_busy(setup: Setup) -> None:
    from tests.fixtures.dshrun import session_logs, wait_for_log

    client = setup.client()
    create(setup, client, "s-busy")
    setup.script.slow_turn()
    prompt(client, "s-busy", "!slow please")
    assert setup.script.arrived.wait(30)
    try:
        outcome = client.compact("s-busy")
    finally:
        setup.script.release()
    assert outcome.status is CompactStatus.BUSY, outcome
    assert outcome.text == BUSY_TEXT and outcome.command_id is not None
    wait_for_log(setup.home, "s-busy", turns_at_least(1), timeout=30)
    log = session_logs(setup.home)["s-busy"]
    assert log.count("compaction/start") == 0
    (done,) = log.of_type("command/done")
    assert done["data"] == {"commandId": outcome.command_id, "kind": "error", "text": BUSY_TEXT}


@pytest.mark.dsh
def test_an_engine_that_hangs_mid_compaction_fails_in_seconds(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fixtures.dshrun import wait_for_log

    monkeypatch.setattr(client_module, "PROBE_EVERY", 0.5)
    monkeypatch.setattr(client_module, "PROBE_TIMEOUT", 1.0)
    client = setup.client(timeout=15 * 60)
    create(setup, client, "s-hang")
    for turn in (1, 2, 3):
        prompt(client, "s-hang", f"turn {turn}: " + "words " * 400)
        wait_for_log(setup.home, "s-hang", turns_at_least(turn), timeout=30)
    pid = setup.engine.state.pid
    assert pid is not None
    asked = len(setup.fake.requests)
    setup.fake.delay = 5.0  # the summariser is slow: dsh web waits on it, still answering
    results: list[CompactOutcome] = []
    worker = threading.Thread(target=lambda: results.append(client.compact("s-hang")))
    worker.start()
    try:
        (*_, summariser) = setup.fake.wait_for_requests(asked + 1)
        assert summariser.is_compaction
        time.sleep(1.5)  # three checks while the model is slow: all answered
        assert worker.is_alive()
        os.killpg(pid, signal.SIGSTOP)  # now dsh web itself hangs
        stopped = time.monotonic()
        worker.join(15)
        hung_for = time.monotonic() - stopped
    finally:
        os.killpg(pid, signal.SIGCONT)
        setup.fake.delay = 0.0
    assert not worker.is_alive()
    (outcome,) = results
    assert outcome.status is CompactStatus.TIMEOUT, outcome
    assert outcome.text == (
        f"{client.base_url} stopped answering while it ran /api/commands/execute "
        f"(3 checks in a row got no answer within 1 s; hung?){ABANDONED}"
    )
    assert hung_for < 8 and outcome.elapsed < 15 and setup.token not in outcome.text
    # Resumed, it ends the command one way or the other (the summary may have arrived
    # while it was stopped), and answers again.
    wait_for_log(setup.home, "s-hang", lambda log: log.count("command/done") >= 1)
    assert setup.client().check().ok


def assert_abandoned(setup: Setup, session_id: str) -> None:
    """The session's log shows ``dsh web`` aborted its one ``/compact``, without a fold."""
    from tests.fixtures.dshrun import wait_for_log

    log = wait_for_log(setup.home, session_id, lambda log: log.count("compaction/end") >= 1)
    (done,) = log.of_type("command/done")
    assert done["data"]["kind"] == "error"
    assert done["data"]["text"] == "This operation was aborted"
    assert log.count("compaction/summary") == 0


@pytest.mark.dsh
def test_a_compaction_dshweb_stops_waiting_for_is_abandoned_by_dsh(setup: Setup) -> None:
    from tests.fixtures.dshrun import wait_for_log

    client = setup.client()
    create(setup, client, "s-gave-up")
    for turn in (1, 2):
        prompt(client, "s-gave-up", f"turn {turn}: " + "words " * 400)
        wait_for_log(setup.home, "s-gave-up", turns_at_least(turn), timeout=30)
    setup.fake.delay = 4.0
    try:
        outcome = client.compact("s-gave-up", timeout=1.5)
        assert outcome.status is CompactStatus.TIMEOUT, outcome
        assert outcome.text.endswith(f"did not answer within 1.5 s{ABANDONED}")
        assert_abandoned(setup, "s-gave-up")
    finally:
        setup.fake.delay = 0.0


@pytest.mark.dsh
def test_a_wrong_token_is_rejected_and_no_token_is_ever_shown(setup: Setup) -> None:
    port = setup.engine.state.port
    assert port is not None
    client = DshWebClient(url(port, "wrong-" + TOKEN), timeout=10)
    check = client.check()
    assert check.status is ConnectionStatus.TOKEN_REJECTED
    assert check.detail == (
        "dsh web refused the launch token (HTTP 401); it changes every time dsh web starts"
    )
    outcome = client.compact("s-compact")
    assert outcome.status is CompactStatus.TOKEN_REJECTED
    missing = setup.client().compact("no-such")
    assert (missing.status, missing.code) == (CompactStatus.ENGINE_ERROR, "session/not-found")
    assert missing.text == 'session "no-such" not found'
    with pytest.raises(
        RpcError, match='commands/list: session/not-found: session "no-such"'
    ) as caught:
        setup.client().rpc("commands/list", {"agentId": "no-such"})
    secrets = (setup.token, TOKEN)
    shown = [check.detail, outcome.text, missing.text, str(caught.value), repr(setup.client())]
    shown += [repr(setup.engine), *setup.engine.output_tail()]
    assert not [s for s in shown for secret in secrets if secret in s]
    assert any("?token=***" in line for line in setup.engine.output_tail())


@pytest.mark.dsh
def test_the_managed_engine_comes_back_after_a_kill_and_stops(
    dsh: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(managed_module, "BACKOFF_FIRST", 0.2)
    seen: list[DshWebState] = []
    engine = ManagedDshWeb(tmp_path, dsh=dsh, on_state=seen.append).start()
    try:
        first = engine.wait_running(60)
        assert first.phase is DshWebPhase.RUNNING and first.pid is not None
        first_url = engine.launch_url
        os.kill(first.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while (state := engine.state).phase is not DshWebPhase.RUNNING or state.pid == first.pid:
            assert time.monotonic() < deadline, (state, engine.output_tail())
            time.sleep(0.05)
        second_url = engine.launch_url
        assert state.restarts == 1 and second_url not in (None, first_url)
        client = engine.client(timeout=10)
        assert client is not None and client.check().ok
    finally:
        engine.stop()
    restarting = [s for s in seen if s.phase is DshWebPhase.RESTARTING]
    assert [s.reason for s in restarting] == [restarting[0].reason]
    assert re.fullmatch(r"dsh web was killed by SIGKILL after \d+ s", restarting[0].reason)
    assert restarting[0].retry_in == 0.2
    assert state.pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(state.pid, 0)
    assert engine.state.phase is DshWebPhase.STOPPED and engine.launch_url is None
    engine.stop()
    again = engine.state  # read anew: a second stop() leaves it stopped
    assert again.phase is DshWebPhase.STOPPED and seen[-1].phase is DshWebPhase.STOPPED


class Trickle:
    """A real TCP server on 127.0.0.1 that logs in like ``dsh web`` and then answers the
    API one byte every ``pause`` seconds, for ever (or accepts and says nothing at all)."""

    def __init__(self, *, pause: float = 0.1, silent: bool = False) -> None:
        self.pause, self.silent = pause, silent
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.stopped = threading.Event()
        self.sent = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head and not self.stopped.is_set():
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            if self.silent:
                self.stopped.wait()
                return
            try:
                if head.startswith(b"GET "):
                    conn.sendall(
                        b"HTTP/1.1 303 See Other\r\nlocation: ./\r\n"
                        b"set-cookie: dsh-auth-x=v1; Path=/\r\ncontent-length: 0\r\n\r\n"
                    )
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not self.stopped.wait(self.pause):
                    conn.sendall(b"x-drip: a\r\n"[self.sent % 11 : self.sent % 11 + 1])
                    self.sent += 1
            except OSError:
                return

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


def _finishes_within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``'s result, or an assertion failure when it is still running after
    ``seconds`` (the call goes on in a daemon thread)."""
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still waiting after {seconds} s"
    return results[0]


def test_an_engine_that_trickles_bytes_still_times_out_by_the_deadline() -> None:
    server = Trickle(pause=0.1)
    try:
        client = DshWebClient(url(server.port), timeout=5)
        started = time.monotonic()
        outcome = _finishes_within(15, lambda: client.compact("s-1", timeout=1.0))
        elapsed = time.monotonic() - started
    finally:
        server.close()
    assert outcome.status is CompactStatus.TIMEOUT
    assert outcome.text.endswith(f"did not answer within 1 s{ABANDONED}")
    assert server.sent >= 5 and elapsed < 3


def test_an_engine_that_accepts_but_never_answers_fails_in_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("dshweb.dsh_web.client.LOGIN_TIMEOUT", 1.0, raising=False)
    server = Trickle(silent=True)
    try:
        client = DshWebClient(url(server.port), timeout=15 * 60)
        outcome = _finishes_within(15, lambda: client.compact("s-1"))
    finally:
        server.close()
    assert outcome.status is CompactStatus.UNREACHABLE
    assert "does not answer (hung?)" in outcome.text and TOKEN not in outcome.text
