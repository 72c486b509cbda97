"""The Compact button's work: reach ``dsh web``, ask it to fold a session, record it.

Thin glue: :mod:`dshweb.dsh_web` talks to DSH; this module keeps one request
in flight per session, runs the request off the request thread (a summariser call can
take minutes; closing the page does not stop it), records every request, and announces
each change of state on the session's channel group with the new state
(:mod:`dshweb.compaction.status`), so open pages show it at once. Which ``dsh web`` is
asked is :mod:`dshweb.compaction.which_dsh_web`'s business; which process runs a request,
:mod:`dshweb.collect.owners`'.

A request records the process that runs it. One still running when its process is
asked to stop, past the stop's grace, is closed then, saying dshweb stopped while it ran
(:mod:`dshweb.live.stopping`); one left in flight by a process that is gone (a crash, a
kill) is closed with the same reason when dshweb or a collector starts and before any
new press, so it never blocks the button for ever.

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

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import close_old_connections, transaction
from django.db.models import QuerySet
from django.utils import timezone

from dshweb.collect.commands import (
    CollectorNotRunning,
    CollectorPlace,
    NoSharedChannelLayer,
    collector_address,
    send_command,
)
from dshweb.collect.owners import owner_alive, process_owner
from dshweb.compaction.models import CompactionRequest
from dshweb.compaction.status import announce
from dshweb.compaction.which_dsh_web import ask_dsh_web
from dshweb.core.said import say
from dshweb.live.protocol import COMPACT_RUN
from dshweb.live.stopping import in_flight

log = logging.getLogger(__name__)

ABANDONED = "abandoned"
ABANDONED_MESSAGE = say("compact-abandoned")
_IN_FLIGHT = (CompactionRequest.State.REQUESTED, CompactionRequest.State.RUNNING)
COLLECTOR_OFFLINE = "collector_offline"
COLLECTOR_UNREACHABLE = "collector_unreachable"


class AlreadyRunning(Exception):
    """A compaction of this session is already in flight."""

    def __init__(self, request: CompactionRequest) -> None:
        super().__init__(
            say("compact-already-running", session=request.session_id, home=request.home)
        )
        self.request = request


def _user(user: AbstractBaseUser | AnonymousUser) -> User | None:
    return user if isinstance(user, User) else None


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
        row
        for row in CompactionRequest.objects.filter(state__in=_IN_FLIGHT).only(
            "pk", "owner", "home", "session_id"
        )
        if not owner_alive(row.owner)
    ]
    if not stale:
        return 0
    closed = _fail(
        CompactionRequest.objects.filter(pk__in=[row.pk for row in stale], state__in=_IN_FLIGHT),
        outcome=ABANDONED,
        message=ABANDONED_MESSAGE,
    )
    log.warning("closed %d compaction request(s) left in flight by a stopped dshweb", closed)
    for home, session_id in {(row.home, row.session_id) for row in stale}:
        announce(home, session_id)
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
            send_command(home, {"type": COMPACT_RUN, "request": request.pk})
            return request
        except Exception as failure:
            log.exception("sending compaction request %s to %s failed", request.pk, home)
            outcome = COLLECTOR_UNREACHABLE
            why = say("collector-unreachable", home=home, failure=failure)
    else:
        outcome = COLLECTOR_UNREACHABLE if unshared else COLLECTOR_OFFLINE
    _fail(CompactionRequest.objects.filter(pk=request.pk), outcome=outcome, message=why)
    announce(home, session_id)
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
    announce(home, session_id)  # open pages show "requested" at once
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
    return [{"type": COMPACT_RUN, "request": pk} for pk in waiting]


def close_interrupted_request(pk: int) -> bool:
    """A stop of this process cut request ``pk`` short: closed as abandoned, with the
    reason (unless it ended meanwhile); whether it was."""
    try:
        closed = _fail(
            CompactionRequest.objects.filter(pk=pk, state__in=_IN_FLIGHT),
            outcome=ABANDONED,
            message=ABANDONED_MESSAGE,
        )
        if closed:
            for home, session_id in CompactionRequest.objects.filter(pk=pk).values_list(
                "home", "session_id"
            ):
                announce(home, session_id)
        return bool(closed)
    finally:
        close_old_connections()


def run_compaction(pk: int, *, home: Path | None = None, stored: bool = True) -> None:
    """Ask ``dsh web`` (a managed one on ``home``, default the configured one; the stored
    one only when ``stored``) to compact, then record the answer (in a worker thread). A
    stop waits for it for its grace, then closes it (:func:`close_interrupted_request`)."""
    with in_flight(f"Compact request {pk}", lambda: close_interrupted_request(pk)):
        _run_compaction(pk, home=home, stored=stored)


def _run_compaction(pk: int, *, home: Path | None, stored: bool) -> None:
    close_old_connections()
    try:
        request = CompactionRequest.objects.get(pk=pk)
        outcome = ask_dsh_web(request.session_id, home, stored)
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
        announce(request.home, request.session_id)
    except Exception:
        log.exception("compaction request %s failed", pk)
        failed = CompactionRequest.objects.filter(pk=pk)
        _fail(
            failed,
            outcome="dshweb_error",
            message=say("compact-dshweb-failed"),
        )
        for name, session_id in failed.values_list("home", "session_id"):
            announce(name, session_id)
    finally:
        close_old_connections()
