"""``dsh web``'s door: DSH's web profile API, called from outside (DSH_FACTS §8).

Contract:

- A :class:`DshWebClient` is made from the launch URL ``dsh web`` prints,
  ``http://127.0.0.1:<port>/?token=…``. Only ``http`` on a loopback host is accepted.
  The token is a secret: it never appears in ``repr()``, in an exception or in a log
  line. It changes every time ``dsh web`` starts, and so does the cookie.
- It logs in lazily (``GET /?token=…`` → 303 + ``Set-Cookie: dsh-auth-<id>=…``), keeps
  the cookie, and logs in again once when the API answers 401 (a refused request was
  not run, so sending it again is safe).
- :meth:`DshWebClient.rpc` raises a :class:`DshWebError`; :meth:`DshWebClient.check`
  and :meth:`DshWebClient.compact` never raise for what the network or ``dsh web`` does:
  they classify it.
- A call naming a session attaches it to ``dsh web``, which appends to its log and holds
  its ``session.lock`` until it exits. :meth:`DshWebClient.check` calls
  ``session/list``, which DSH describes as "Read all visible Session rows without
  resuming an Agent": it names no session and writes nothing.
- Every call has an overall deadline, not a per-read timeout: a watchdog shuts the
  socket when it passes, so a ``dsh web`` that trickles one byte a second still times
  out. The login (instant on a live one) gets at most :data:`LOGIN_TIMEOUT`: one
  that accepts connections but answers nothing is reported in seconds.
- A long call (``/compact`` waits for the summariser, minutes at worst) is watched: every
  :data:`PROBE_EVERY` s an unauthenticated ``HEAD /`` checks that ``dsh web`` still
  answers anything (its 401 comes in a millisecond, even mid-fold); after
  :data:`PROBE_MISSES` checks in a row without an answer the call ends as
  :class:`DshWebHung`, so a ``dsh web`` that hangs (stopped, deadlocked) fails in seconds,
  while a slow model is waited for up to the call's deadline.
- Thread-safe: one HTTP connection per call; the cookie is guarded by a lock.
"""

from __future__ import annotations

import http.client
import http.cookiejar
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import quote
from urllib.request import Request

from dshweb.core.said import say
from dshweb.dsh_web.launch_url import DshWebError as DshWebError
from dshweb.dsh_web.launch_url import LaunchUrlError as LaunchUrlError
from dshweb.dsh_web.launch_url import parse_launch_url

COOKIE_PREFIX = "dsh-auth-"
WRITER_HELD = "session/writer-held"
"""DSH's error code when another process (an SDK harness, a CLI, another ``dsh web``)
holds the session's ``session.lock``."""
BUSY_TEXT = "Compaction is unavailable"
"""Start of DSH's ``/compact`` answer while the agent is not idle: "Compaction is
unavailable because this process has an active compaction, or the agent is not idle."."""
ABANDONED_BY_DSH = "compact-abandoned-by-dsh"
"""Said after a timeout (its code): ``dsh web`` aborts a command whose HTTP caller has gone (its log
shows ``command/done`` ``"This operation was aborted"``). A summary that had already
arrived may still be logged (a fold) before the abort; the log tells."""
NO_COMMAND = "dshweb/no-command"
UNEXPECTED = "dshweb/unexpected-answer"
_METHOD = re.compile(r"[A-Za-z][\w-]*/[A-Za-z][\w/-]*")
_EXCERPT = 200
LOGIN_TIMEOUT = 10.0
"""Longest wait for the token login, whatever the call's own deadline."""
PROBE_EVERY = 2.0
"""Seconds between liveness checks of ``dsh web`` while a watched call waits."""
PROBE_TIMEOUT = 2.0
"""Longest wait for one liveness check's answer."""
PROBE_MISSES = 3
"""Liveness checks in a row without an answer that end a watched call as hung."""


class DshWebUnreachable(DshWebError):
    """Nothing accepted the connection, or it broke before an answer."""


class DshWebTimeout(DshWebError):
    """``dsh web`` accepted the request but did not answer in time."""


class DshWebHung(DshWebTimeout):
    """``dsh web`` stopped answering anything while a watched call waited."""


class TokenRejected(DshWebError):
    """The launch token gave no session cookie, or the API refused the cookie."""


class NotDsh(DshWebError):
    """Something answered, but not the way ``dsh web`` does."""


class RpcError(DshWebError):
    """The API answered ``ok: false``; ``code``/``message``/``details`` are DSH's."""

    def __init__(self, method: str, code: str, message: str, details: Any) -> None:
        super().__init__(f"{method}: {code}: {message}")
        self.method = method
        self.code = code
        self.message = message
        self.details = details


class ConnectionStatus(StrEnum):
    REACHABLE = "reachable"
    UNREACHABLE = "unreachable"
    TOKEN_REJECTED = "token_rejected"
    NOT_DSH = "not_dsh"


@dataclass(frozen=True, slots=True)
class ConnectionCheck:
    """What a "test connection" found; ``sessions`` is how many ``session/list`` listed."""

    status: ConnectionStatus
    detail: str
    sessions: int | None = None
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status is ConnectionStatus.REACHABLE


class CompactStatus(StrEnum):
    DONE = "done"
    BUSY = "busy"
    OWNED_ELSEWHERE = "owned_elsewhere"
    ENGINE_ERROR = "engine_error"
    UNREACHABLE = "unreachable"
    TOKEN_REJECTED = "token_rejected"
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class CompactOutcome:
    """How a ``/compact`` ended.

    ``text`` is DSH's own words when it gave any (``"Compacted 24 history items
    (~14711 tokens)."``), else ours. ``code`` is DSH's error code for ``ok: false``
    answers (``session/writer-held``, ``session/not-found``, …) or a ``dshweb/…`` code.
    """

    status: CompactStatus
    text: str
    command_id: str | None = None
    source_event_seq: int | None = None
    code: str | None = None
    details: Any = field(default=None, compare=False)
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status is CompactStatus.DONE


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    response: http.client.HTTPResponse
    """Its headers, for the login's cookie (the body is already read into ``body``)."""
    body: bytes


class _Watchdog(threading.Thread):
    """Shuts a call's socket at its deadline (waking a read that is still trickling in)
    or, when it has a ``probe``, once :data:`PROBE_MISSES` probes in a row fail; then
    ``expired`` is set, and ``hung`` says why when it was the probes. Set ``finished``
    when the call ends."""

    def __init__(
        self,
        conn: http.client.HTTPConnection,
        deadline: float,
        probe: Callable[[], bool] | None,
        hung_text: str,
    ) -> None:
        super().__init__(name="dsh-web-watchdog", daemon=True)
        self.conn, self.deadline, self.probe, self.hung_text = conn, deadline, probe, hung_text
        self.finished, self.expired = threading.Event(), threading.Event()
        self.hung = ""
        self.start()

    def run(self) -> None:
        misses = 0
        while not self.finished.wait(max(0.0, self._next_look())):
            if time.monotonic() >= self.deadline or self.probe is None:
                break
            misses = 0 if self.probe() else misses + 1
            if misses >= PROBE_MISSES:
                self.hung = say(
                    "engine-hung",
                    what=self.hung_text,
                    misses=misses,
                    seconds=f"{PROBE_TIMEOUT:g}",
                )
                break
        if self.finished.is_set():
            return
        self.expired.set()
        sock = self.conn.sock
        if isinstance(sock, socket.socket):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _next_look(self) -> float:
        left = self.deadline - time.monotonic()
        return left if self.probe is None else min(left, PROBE_EVERY)


def _excerpt(raw: bytes) -> str:
    text = raw[:_EXCERPT].decode("utf-8", "replace").strip()
    return text + ("…" if len(raw) > _EXCERPT else "")


class DshWebClient:
    """Talks to one running ``dsh web`` through its launch URL."""

    def __init__(self, launch_url: str, *, timeout: float) -> None:
        self._target = parse_launch_url(launch_url)
        self.timeout = timeout
        self._cookie: str | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """``http://host:port`` without the token (safe to show)."""
        host = f"[{self._target.host}]" if ":" in self._target.host else self._target.host
        return f"http://{host}:{self._target.port}"

    def __repr__(self) -> str:
        return f"DshWebClient({self.base_url}, token=***)"

    # --- transport ----------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str],
        deadline: float,
        budget: float,
        watched: bool = False,
    ) -> _Answer:
        """One HTTP exchange that ends by ``deadline`` (``time.monotonic()``), whatever the
        ``dsh web`` does; ``budget`` is the whole call's allowance, for the message.
        ``watched``: also end it when ``dsh web`` stops answering liveness checks."""
        remaining = deadline - time.monotonic()
        late = say("engine-late", base=self.base_url, seconds=f"{budget:g}")
        if remaining <= 0:
            raise DshWebTimeout(late)
        conn = http.client.HTTPConnection(self._target.host, self._target.port, timeout=remaining)
        probe = (lambda: self._answers(deadline)) if watched else None
        watchdog = _Watchdog(
            conn, deadline, probe, say("engine-stopped-answering", base=self.base_url, path=path)
        )
        expired = watchdog.expired

        def out_of_time() -> DshWebTimeout:
            return DshWebHung(watchdog.hung) if watchdog.hung else DshWebTimeout(late)

        try:
            try:
                conn.connect()
            except TimeoutError as error:
                raise DshWebUnreachable(say("engine-no-connection", base=self.base_url)) from error
            except OSError as error:
                if expired.is_set():
                    raise DshWebUnreachable(
                        say("engine-no-connection", base=self.base_url)
                    ) from error
                reason = error.strerror or type(error).__name__
                raise DshWebUnreachable(
                    say("engine-cannot-connect", base=self.base_url, reason=reason)
                ) from error
            try:
                conn.request(method, path, body=body, headers=dict(headers))
                response = conn.getresponse()
                raw = response.read()
            except TimeoutError as error:
                raise out_of_time() from error
            except OSError as error:  # before HTTPException: RemoteDisconnected is both
                if expired.is_set():
                    raise out_of_time() from error
                reason = error.strerror or type(error).__name__
                raise DshWebUnreachable(
                    say("engine-broke-connection", base=self.base_url, reason=reason)
                ) from error
            except http.client.HTTPException as error:
                if expired.is_set():
                    raise out_of_time() from error
                raise NotDsh(
                    say("engine-not-http", base=self.base_url, error=type(error).__name__)
                ) from error
            if expired.is_set():  # a body read to the end of a shut socket is cut short
                raise out_of_time()
        finally:
            watchdog.finished.set()
            conn.close()
        return _Answer(status=response.status, response=response, body=raw)

    def _answers(self, deadline: float) -> bool:
        """Does ``dsh web`` answer an unauthenticated ``HEAD /`` (any HTTP status) within
        :data:`PROBE_TIMEOUT` s? It carries no token or cookie and touches no session."""
        wait = min(PROBE_TIMEOUT, max(0.01, deadline - time.monotonic()))
        conn = http.client.HTTPConnection(self._target.host, self._target.port, timeout=wait)
        try:
            conn.request("HEAD", "/")
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()
        return True

    def _login(self, deadline: float) -> str:
        """``GET /?token=…``; returns the ``dsh-auth-…=…`` cookie pair."""
        path = f"{self._target.path}?token={quote(self._target.token, safe='')}"
        budget = min(deadline - time.monotonic(), LOGIN_TIMEOUT)
        try:
            answer = self._send(
                "GET", path, headers={}, deadline=time.monotonic() + budget, budget=budget
            )
        except DshWebTimeout as error:  # nothing was asked of it yet
            raise DshWebUnreachable(say("engine-login-silent", problem=error)) from error
        if answer.status == 401:
            raise TokenRejected(say("token-refused"))
        jar = http.cookiejar.CookieJar()
        jar.extract_cookies(answer.response, Request(self.base_url + self._target.path))
        ours = [
            f"{c.name}={c.value}"
            for c in jar
            if c.name.startswith(COOKIE_PREFIX) and c.value is not None
        ]
        if answer.status == 303 and ours:
            return ours[0]
        if answer.status == 303:
            raise TokenRejected(say("token-no-cookie"))
        raise NotDsh(say("token-not-dsh", base=self.base_url, status=answer.status))

    def _cookie_for(self, deadline: float, *, fresh: bool = False) -> str:
        with self._lock:
            if self._cookie is None or fresh:
                self._cookie = self._login(deadline)
            return self._cookie

    def _forget(self, cookie: str) -> None:
        with self._lock:
            if self._cookie == cookie:
                self._cookie = None

    # --- the API ------------------------------------------------------------------------

    def rpc(
        self,
        method: str,
        args: Mapping[str, Any],
        *,
        timeout: float | None = None,
        watched: bool = False,
    ) -> Any:
        """``POST /api/<method>``; returns ``result.value`` (``None`` when DSH sends none).

        Raises :class:`RpcError` for ``ok: false`` and the other :class:`DshWebError`
        subclasses for everything else. ``watched``: end the wait as :class:`DshWebHung`
        once ``dsh web`` stops answering liveness checks.
        """
        if not _METHOD.fullmatch(method):
            raise ValueError(f"not an API method name: {method!r}")
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        rpc_id = str(uuid.uuid4())
        body = json.dumps(
            {
                "type": "client-request",
                "rpcId": rpc_id,
                "method": method,
                "payload": {"args": dict(args)},
            }
        ).encode()
        answer: _Answer | None = None
        for attempt in range(2):
            cookie = self._cookie_for(deadline)
            answer = self._send(
                "POST",
                f"/api/{method}",
                body=body,
                headers={"content-type": "application/json", "cookie": cookie},
                deadline=deadline,
                budget=wait,
                watched=watched,
            )
            if answer.status != 401:
                break
            self._forget(cookie)
            if attempt == 1:
                raise TokenRejected(say("cookie-refused", method=method))
        assert answer is not None
        return self._value(method, rpc_id, answer)

    def _excerpt(self, raw: bytes) -> str:
        """The start of an answer, for a message (an echo of the token is blanked out)."""
        return _excerpt(raw).replace(self._target.token, "***")

    def _value(self, method: str, rpc_id: str, answer: _Answer) -> Any:
        if answer.status != 200:
            excerpt = self._excerpt(answer.body)
            raise NotDsh(say("answer-http", method=method, status=answer.status, excerpt=excerpt))
        try:
            envelope = json.loads(answer.body)
        except ValueError as error:
            raise NotDsh(
                say("answer-not-json", method=method, excerpt=self._excerpt(answer.body))
            ) from error
        result = envelope.get("result") if isinstance(envelope, dict) else None
        if (
            not isinstance(envelope, dict)
            or envelope.get("type") != "server-response"
            or envelope.get("rpcId") != rpc_id
            or not isinstance(result, dict)
            or not isinstance(result.get("ok"), bool)
        ):
            raise NotDsh(say("answer-not-dsh", method=method, excerpt=self._excerpt(answer.body)))
        if result["ok"]:
            return result.get("value")
        problem = result.get("error")
        problem = problem if isinstance(problem, dict) else {}
        raise RpcError(
            method,
            str(problem.get("code") or "unknown"),
            str(problem.get("message") or ""),
            problem.get("details"),
        )

    def check(self) -> ConnectionCheck:
        """Log in afresh and list the sessions: is this a ``dsh web`` that takes our token?"""
        started = time.monotonic()

        def done(
            status: ConnectionStatus, detail: str, sessions: int | None = None
        ) -> ConnectionCheck:
            return ConnectionCheck(status, detail, sessions, time.monotonic() - started)

        try:
            self._cookie_for(time.monotonic() + self.timeout, fresh=True)
            value = self.rpc("session/list", {"_request": {}})
        except (DshWebUnreachable, DshWebTimeout) as error:
            return done(ConnectionStatus.UNREACHABLE, str(error))
        except TokenRejected as error:
            return done(ConnectionStatus.TOKEN_REJECTED, str(error))
        except NotDsh as error:
            return done(ConnectionStatus.NOT_DSH, str(error))
        except RpcError as error:
            return done(ConnectionStatus.REACHABLE, say("check-refused", error=error))
        items = value.get("items") if isinstance(value, dict) else None
        if not isinstance(items, list):
            return done(ConnectionStatus.NOT_DSH, say("check-no-items"))
        detail = say("check-lists", count=len(items))
        return done(ConnectionStatus.REACHABLE, detail, len(items))

    def compact(self, session_id: str, *, timeout: float | None = None) -> CompactOutcome:
        """Run ``/compact`` on one session (DSH_FACTS §7) and say how it ended.

        The session must be idle and not owned by another process. On ``timeout`` the
        client stops waiting and ``dsh web`` abandons the compaction (it aborts a command
        whose caller has gone, as tests/dsh_web/test_client.py shows on the real one).
        """
        started = time.monotonic()
        args = {"agentId": session_id, "line": "/compact", "submittedAttachments": []}

        def outcome(status: CompactStatus, text: str, **extra: Any) -> CompactOutcome:
            return CompactOutcome(status, text, elapsed=time.monotonic() - started, **extra)

        try:
            value = self.rpc("commands/execute", args, timeout=timeout, watched=True)
        except DshWebUnreachable as error:
            return outcome(CompactStatus.UNREACHABLE, str(error))
        except DshWebTimeout as error:
            return outcome(CompactStatus.TIMEOUT, say(ABANDONED_BY_DSH, problem=error))
        except TokenRejected as error:
            return outcome(CompactStatus.TOKEN_REJECTED, str(error))
        except NotDsh as error:
            return outcome(CompactStatus.ENGINE_ERROR, str(error), code=UNEXPECTED)
        except RpcError as error:
            status = (
                CompactStatus.OWNED_ELSEWHERE
                if error.code == WRITER_HELD
                else CompactStatus.ENGINE_ERROR
            )
            return outcome(status, error.message, code=error.code, details=error.details)
        if value is None:  # DSH's answer when the line names no known command
            return outcome(
                CompactStatus.ENGINE_ERROR,
                say("compact-no-command"),
                code=NO_COMMAND,
            )
        result = value.get("result") if isinstance(value, dict) else None
        if not isinstance(result, dict):
            return outcome(
                CompactStatus.ENGINE_ERROR,
                say("compact-unexpected", value=f"{value!r:.200}"),
                code=UNEXPECTED,
            )
        command_id = value.get("commandId")
        command_id = command_id if isinstance(command_id, str) else None
        kind, text = result.get("kind"), str(result.get("text") or "")
        seq = result.get("sourceEventSeq")
        if kind == "success":
            return outcome(
                CompactStatus.DONE,
                text,
                command_id=command_id,
                source_event_seq=seq if isinstance(seq, int) else None,
            )
        status = CompactStatus.BUSY if text.startswith(BUSY_TEXT) else CompactStatus.ENGINE_ERROR
        said = text or say("compact-ended-as", kind=repr(kind))
        return outcome(status, said, command_id=command_id)
