"""The Compact button's work: reach ``dsh web``, ask it to fold a session, record it.

Thin glue: :mod:`dshweb.dsh_web` talks to DSH; this module chooses which ``dsh web``
(``DSHWEB``'s ``ENGINE_URL`` or ``ENGINE``, else the stored setting), keeps one request
in flight per session, runs the request off the request thread (a summariser call can
take minutes; closing the page does not stop it), records every request, and announces
each change of state on the session's channel group (``compact.changed``), so open pages
show it at once. The latest request of each session is kept in memory, so a pushed
update of the session reads it without a query; a change forgets the kept one, in this
process directly and in every process with a socket on the session through its
``compact.changed``; a page load reads it afresh (another web worker may have changed it).

A request records the process that runs it. One left in flight by a process that is
gone (a crash, a kill) is closed with a reason when dshweb starts and before any new
press, so it never blocks the button for ever.

On a web worker (``DSHWEB_COLLECT=off``) a press travels to the collector of the home
(:func:`request_collected_compaction`): the request is recorded here as always, owned by
the collector's lease (:func:`~dshweb.collect.commands.collector_owner`), and a
``compact.run`` command naming the row is sent to it; the collector runs it with its own
``dsh web`` (:func:`run_commanded_compaction`: the launch token never leaves its machine)
and records and announces the answer. With no live collector the press fails at once,
recorded with the reason, and nothing is sent. A request whose collector's lease is no
longer held is abandoned, like one whose process is gone.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import close_old_connections, transaction
from django.db.models import QuerySet
from django.db.models.signals import post_save
from django.utils import timezone

from dshweb.collect.commands import (
    OWNER_PREFIX,
    CollectorNotRunning,
    CollectorPlace,
    NoSharedChannelLayer,
    collector_address,
    collector_owner_alive,
    send_command,
)
from dshweb.compaction.models import CompactionRequest, DshWebSetting
from dshweb.compaction.records import RequestRecord
from dshweb.config import get_config
from dshweb.dsh_web.client import (
    CompactOutcome,
    CompactStatus,
    ConnectionCheck,
    ConnectionStatus,
    DshWebClient,
    LaunchUrlError,
)
from dshweb.dsh_web.managed import ManagedDshWeb
from dshweb.live.groups import session_group
from dshweb.live.service import shown_home

log = logging.getLogger("dshweb.compact")

COMPACT_TIMEOUT = 15 * 60.0
"""A summariser call can take minutes; past this overall deadline the request is reported
as timed out (a ``dsh web`` that answers nothing at all fails at the login, in seconds)."""
ABANDONED = "abandoned"
ABANDONED_TEXT = "dshweb stopped while this ran"
_PROCESS_TOKEN = uuid.uuid4().hex
_IN_FLIGHT = (CompactionRequest.State.REQUESTED, CompactionRequest.State.RUNNING)
MANAGED_START_TIMEOUT = 60.0
RUN_COMMAND = "compact.run"
COLLECTOR_OFFLINE = "collector_offline"
COLLECTOR_UNREACHABLE = "collector_unreachable"


class AlreadyRunning(Exception):
    """A compaction of this session is already in flight."""

    def __init__(self, request: CompactionRequest) -> None:
        super().__init__(
            f"a compaction of {request.session_id} of {request.home} is already running"
        )
        self.request = request


_managed: ManagedDshWeb | None = None
_managed_lock = threading.Lock()


def managed_dsh_web(home: Path | None = None) -> ManagedDshWeb:
    """The process's one managed ``dsh web`` for ``home`` (default: the configured one;
    started lazily)."""
    global _managed
    with _managed_lock:
        home = shown_home().path if home is None else home
        if _managed is None or _managed.home != home:
            if _managed is not None:
                _managed.stop()
            _managed = ManagedDshWeb(home).start()
            atexit.register(_managed.stop)
        return _managed


def dsh_web_choice(home: Path | None = None, *, stored: bool = True) -> tuple[str, str | None, str]:
    """(mode, launch URL or None, why not) — the settings (``DSHWEB_ENGINE_URL``,
    ``DSHWEB_ENGINE``) win over the stored row; a managed one runs on ``home`` (default:
    the configured one). A collector reads no stored row (``stored=False``): the shared
    database is no place for its machine's launch token."""
    config = get_config()
    if config.engine_url:
        return "url", config.engine_url, ""
    if config.engine == "managed":
        mode = "managed"
    elif not stored:
        return (
            "off",
            None,
            (
                "the collector of this home has no DSH engine: set DSHWEB_ENGINE_URL or "
                "DSHWEB_ENGINE=managed in its environment"
            ),
        )
    else:
        row = DshWebSetting.objects.first()
        mode = row.mode if row is not None else DshWebSetting.Mode.OFF
        if mode == DshWebSetting.Mode.URL:
            launch = row.launch_url if row is not None else ""
            return "url", launch or None, "" if launch else "no launch URL is stored"
    if mode == "managed":
        managed = managed_dsh_web(home)
        state = managed.wait_running(MANAGED_START_TIMEOUT)
        return "managed", managed.launch_url, "" if managed.launch_url else state.reason
    return "off", None, "no DSH engine is configured (Settings → Engine)"


def dsh_web_from_environment() -> str | None:
    """How the environment sets ``dsh web``, if it does (it wins over the stored row)."""
    config = get_config()
    if config.engine_url:
        return "DSHWEB_ENGINE_URL (a launch URL)"
    if config.engine == "managed":
        return "DSHWEB_ENGINE=managed"
    return None


def test_connection() -> ConnectionCheck:
    """What the configured ``dsh web`` answers now (never attaches a session)."""
    _mode, url, why = dsh_web_choice()
    if url is None:
        return ConnectionCheck(ConnectionStatus.UNREACHABLE, f"not configured: {why}")
    try:
        return DshWebClient(url, timeout=10.0).check()
    except LaunchUrlError as problem:
        return ConnectionCheck(ConnectionStatus.UNREACHABLE, str(problem))


def _user(user: AbstractBaseUser | AnonymousUser) -> User | None:
    return user if isinstance(user, User) else None


def process_owner() -> str:
    """``host:pid:token`` of this process (the token tells a reused pid apart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_PROCESS_TOKEN}"


def _owner_alive(owner: str) -> bool:
    if not owner:
        return False  # recorded before requests named their process
    if owner.startswith(OWNER_PREFIX):
        return collector_owner_alive(owner)
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    if host != socket.gethostname():
        return True  # another machine's process: nothing here can tell
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return token == _PROCESS_TOKEN
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, someone else's
    return True


def _fail(requests: QuerySet[CompactionRequest], *, outcome: str, message: str) -> int:
    """Close ``requests`` as failed now, with ``outcome`` and ``message``; how many."""
    return requests.update(
        state=CompactionRequest.State.FAILED,
        outcome=outcome,
        message=message,
        finished_at=timezone.now(),
    )


def close_abandoned_requests() -> int:
    """Close every in-flight request whose process is gone; returns how many."""
    stale = [
        row.pk
        for row in CompactionRequest.objects.filter(state__in=_IN_FLIGHT).only("pk", "owner")
        if not _owner_alive(row.owner)
    ]
    if not stale:
        return 0
    closed = _fail(
        CompactionRequest.objects.filter(pk__in=stale, state__in=_IN_FLIGHT),
        outcome=ABANDONED,
        message=f"{ABANDONED_TEXT}; the session log shows whether DSH folded it",
    )
    log.warning("closed %d compaction request(s) left in flight by a stopped dshweb", closed)
    _records.clear()
    return closed


def request_compaction(
    *,
    home: str,
    session_id: str,
    user: AbstractBaseUser | AnonymousUser,
    seq: int,
    projected: int | None,
) -> CompactionRequest:
    """Record a request for a session of this process's own home (named ``home``) and
    start it in the background; refuses a second one."""
    request = _record_request(
        home=home,
        session_id=session_id,
        user=user,
        seq=seq,
        projected=projected,
        owner=process_owner(),
    )
    thread = threading.Thread(
        target=run_compaction,
        args=(request.pk,),
        name=f"dshweb-compact-{request.pk}",
        daemon=True,
    )
    thread.start()
    return request


def request_collected_compaction(
    *,
    home: str,
    session_id: str,
    user: AbstractBaseUser | AnonymousUser,
    seq: int,
    projected: int | None,
) -> CompactionRequest:
    """On a web worker: record a request and send it to the collector of ``home``;
    refuses a second one. With no live collector the request is recorded failed, with
    the reason, and nothing is sent."""
    try:
        owner = collector_address(home)
    except CollectorNotRunning as offline:
        owner, why = process_owner(), str(offline)
        unshared = isinstance(offline, NoSharedChannelLayer)
    else:
        why, unshared = "", False
    request = _record_request(
        home=home, session_id=session_id, user=user, seq=seq, projected=projected, owner=owner
    )
    if not why:
        try:
            send_command(home, {"type": RUN_COMMAND, "request": request.pk})
            return request
        except Exception as failure:
            log.exception("sending compaction request %s to %s failed", request.pk, home)
            outcome = COLLECTOR_UNREACHABLE
            why = f"the collector of {home} could not be reached: {failure}"
    else:
        outcome = COLLECTOR_UNREACHABLE if unshared else COLLECTOR_OFFLINE
    _fail(CompactionRequest.objects.filter(pk=request.pk), outcome=outcome, message=why)
    _announce(home, session_id)
    request.refresh_from_db()
    return request


def _record_request(
    *,
    home: str,
    session_id: str,
    user: AbstractBaseUser | AnonymousUser,
    seq: int,
    projected: int | None,
    owner: str,
) -> CompactionRequest:
    close_abandoned_requests()
    with transaction.atomic():
        running = (
            CompactionRequest.objects.select_for_update()
            .filter(home=home, session_id=session_id, state__in=_IN_FLIGHT)
            .first()
        )
        if running is not None:
            raise AlreadyRunning(running)
        request = CompactionRequest.objects.create(
            home=home,
            session_id=session_id,
            user=_user(user),
            seq_at_request=seq,
            projected_before=projected,
            owner=owner,
        )
    _announce(home, session_id)  # open pages show "requested" at once
    return request


def run_commanded_compaction(message: Mapping[str, Any], place: CollectorPlace) -> None:
    """In a collector: run the request a ``compact.run`` command names, once: only if it
    is still requested and addressed to this collector (a command to an earlier one, or
    one this collector has claimed already, is dropped)."""
    pk = int(message["request"])
    close_old_connections()
    claimed = CompactionRequest.objects.filter(
        pk=pk, state=CompactionRequest.State.REQUESTED, owner=place.owner
    ).update(state=CompactionRequest.State.RUNNING)
    if not claimed:
        log.info("compaction request %s is not this collector's to run; dropped", pk)
        return
    run_compaction(pk, home=place.home, stored=False)


def waiting_compactions(place: CollectorPlace) -> list[dict[str, Any]]:
    """The ``compact.run`` commands of the requests waiting for this collector (their
    message lost, or sent before it listened)."""
    waiting = CompactionRequest.objects.filter(
        state=CompactionRequest.State.REQUESTED, owner=place.owner
    ).values_list("pk", flat=True)
    return [{"type": RUN_COMMAND, "request": pk} for pk in waiting]


def run_compaction(pk: int, *, home: Path | None = None, stored: bool = True) -> None:
    """Ask ``dsh web`` (a managed one on ``home``, default the configured one; the stored
    one only when ``stored``) to compact, then record the answer (in a worker thread)."""
    close_old_connections()
    try:
        request = CompactionRequest.objects.get(pk=pk)
        outcome = _ask_dsh_web(request.session_id, home, stored)
        request.state = (
            CompactionRequest.State.DONE if outcome.ok else CompactionRequest.State.FAILED
        )
        request.outcome = outcome.status.value
        request.message = outcome.text
        request.dsh_web_answer = json.dumps(
            {k: v for k, v in asdict(outcome).items() if k != "details"}
            | {"details": outcome.details},
            default=str,
        )
        request.finished_at = timezone.now()
        request.save()
        _announce(request.home, request.session_id)
    except Exception:
        log.exception("compaction request %s failed", pk)
        _fail(
            CompactionRequest.objects.filter(pk=pk),
            outcome="dshweb_error",
            message="dshweb failed while asking the engine; see its log",
        )
        _records.clear()
    finally:
        close_old_connections()


def _ask_dsh_web(session_id: str, home: Path | None, stored: bool) -> CompactOutcome:
    _mode, url, why = dsh_web_choice(home, stored=stored)
    if url is None:
        return CompactOutcome(
            CompactStatus.ENGINE_ERROR, f"not configured: {why}", code="dshweb/not-configured"
        )
    try:
        client = DshWebClient(url, timeout=COMPACT_TIMEOUT)
    except LaunchUrlError as problem:
        return CompactOutcome(CompactStatus.ENGINE_ERROR, str(problem), code="dshweb/bad-url")
    return client.compact(session_id)


COMPACT_CHANGED = "compact.changed"
_records: dict[tuple[str, str], RequestRecord | None] = {}
"""The latest request of each session looked at (by home and id), as its status line
needs it."""


_sockets_loop: asyncio.AbstractEventLoop | None = None
"""The event loop the session sockets run on (the server's)."""


def announce_on(loop: asyncio.AbstractEventLoop) -> None:
    """Send announcements on ``loop``, the one the session sockets run on (each socket
    says so when it connects)."""
    global _sockets_loop
    _sockets_loop = loop


def _announce(home: str, session_id: str) -> None:
    """Forget the kept request of ``session_id`` of ``home`` and tell its open pages."""
    _records.pop((home, session_id), None)
    layer = get_channel_layer()
    if layer is None:
        return
    group = session_group(home, session_id)
    message = {"type": COMPACT_CHANGED, "home": home, "session_id": session_id}
    loop = _sockets_loop
    if loop is not None and loop.is_running():
        # The in-memory layer's queues belong to the sockets' loop: a send from the worker
        # thread through a loop of its own would wake no socket until something else did.
        asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
    else:
        async_to_sync(layer.group_send)(group, message)


def forget_records(home: str | None = None, session_id: str = "") -> None:
    """Drop the kept request of ``session_id`` of ``home`` (of every session when
    ``home`` is ``None``): another process may have changed it (its announcement reaches
    this one's sockets through a shared channel layer, and a page reads it afresh), or a
    test wrote it straight to the database."""
    if home is None:
        _records.clear()
    else:
        _records.pop((home, session_id), None)


def _forget_saved(sender: type[CompactionRequest], instance: CompactionRequest, **_: Any) -> None:
    _records.pop((instance.home, instance.session_id), None)


post_save.connect(_forget_saved, sender=CompactionRequest, dispatch_uid="dshweb-compact-records")


def latest_request(home: str, session_id: str) -> CompactionRequest | None:
    return CompactionRequest.objects.filter(home=home, session_id=session_id).first()


def latest_record(home: str, session_id: str) -> RequestRecord | None:
    """The session's latest request, as the status line reads it (kept in memory)."""
    key = (home, session_id)
    if key not in _records:
        request = latest_request(home, session_id)
        _records[key] = (
            None
            if request is None
            else RequestRecord(
                request.state, request.outcome, request.message, request.seq_at_request
            )
        )
    return _records[key]
