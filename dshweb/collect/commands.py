"""Commands to a home's collector over the channel layer: actions go to the home's machine.

A web worker (``DSHWEB_COLLECT=off``) never reads or changes a DSH home; an action on a
collected home (the Compact button) travels to the collector of that home as a message
on the group :func:`collector_group` of the home's name. The collector joins the group on
its own event loop (:func:`listen_for_commands`) and runs the handler registered for the
message's ``type`` (:func:`register_command`; the dashboard registers its own when its app
is ready, so this module knows no action) in a thread of its own, with the
:class:`CollectorPlace` it runs in: the home's name, its folder on this machine, and the
owner tag of its lease.

Every message is sealed (:func:`seal`): signed with a key derived from the secret key
(Django's signing, salted for this use) and timed, so only a process holding the secret
key can send one. A collector opens each before it acts (:func:`open_sealed`) and
refuses, with a warning in its log, a message that is unsigned, forged, tampered with,
older than :data:`COMMAND_MAX_AGE` or seen before; a worker does the same with the
answers it waits for. Redis access alone is not enough to act on a collector.

A command names a database row and nothing secret: what it needs (the launch token of
``dsh web``, the patch files) stays on the collector's machine. The row is the command;
the message only wakes the collector. A message can be lost (sent while the collector's
Redis was restarting, or before the collector joined its group again), so a collector
also looks for the work left in the database for it (each kind's ``pending`` finder)
whenever it joins its group and every :data:`~dshweb.live.timing.PICK_UP_EVERY`
seconds; a handler claims its row before it runs it, so work found twice runs once.

:func:`collector_address` reads the home's lease before anything is sent, and refuses
with :class:`CollectorNotRunning` when no live collector holds it: a group with nobody
in it drops a message without a word, so a command is only sent to a running collector.
The owner tag (:func:`collector_owner`) names the lease, not a process: work addressed
to a collector is abandoned when its lease is no longer held (dead, or taken over), on
whatever machine it ran.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.core import signing
from django.db import close_old_connections
from django.utils import timezone
from django.utils.module_loading import import_string

from dshweb.collect.lease import lease_is_held
from dshweb.collect.models import CollectorLease
from dshweb.core.errors import DshError
from dshweb.core.said import say
from dshweb.live import timing
from dshweb.live.outage import Outage, database_unreachable, layer_unreachable
from dshweb.live.protocol import COLLECTOR_ANSWER, collector_group
from dshweb.live.stopping import stop_asked

log = logging.getLogger(__name__)

OWNER_PREFIX = "collector/"
COMMAND_SALT = "dshweb.collect.commands"
"""Salts the key a command is signed with (Django's signing derives it from the secret
key): a signature made for anything else never opens a command."""
ANSWER_SALT = "dshweb.collect.commands.answer"
COMMAND_MAX_AGE = 60
"""Seconds a sealed message is good for after it was sealed."""
SEALED = "sealed"
REJOIN_EVERY = 600.0
"""Seconds between joins of the group again: a Redis layer forgets a member after its
``group_expiry`` (a day by default), and a collector runs for longer."""


class CollectorNotRunning(DshError):
    """No live collector holds the home's lease; the message says since when."""


class NoSharedChannelLayer(CollectorNotRunning):
    """The collector runs in another process and this one's channel layer is in memory:
    a command would reach nobody."""


@dataclass(frozen=True, slots=True)
class CollectorPlace:
    """Where a collector runs: what its command handlers act on."""

    name: str
    home: Path
    owner: str
    """:func:`collector_owner` of its lease."""


CommandHandler = Callable[[Mapping[str, Any], CollectorPlace], None]
PendingFinder = Callable[[CollectorPlace], list[dict[str, Any]]]
"""The commands of one kind whose work waits in the database for this collector."""
_handlers: dict[str, str] = {}
_finders: dict[str, str] = {}


def register_command(kind: str, handler: str, pending: str | None = None) -> None:
    """Run the :data:`CommandHandler` at dotted path ``handler`` in the collector for each
    command whose ``type`` is ``kind``; the :data:`PendingFinder` at ``pending`` finds the
    ones waiting in the database (a handler must claim its work). Named, not imported: an
    app registers them in every process Django starts, and only a collector runs them."""
    _handlers[kind] = handler
    if pending is not None:
        _finders[kind] = pending


def collector_owner(name: str, token: str) -> str:
    """The owner tag of work addressed to the collector holding lease ``token`` of
    ``name`` (the token hashed: the tag is shown in the audit)."""
    digest = hashlib.sha256(f"{name}\0{token}".encode()).hexdigest()[:24]
    return f"{OWNER_PREFIX}{digest}"


def collector_owner_alive(owner: str) -> bool:
    """Whether the collector ``owner`` names still holds its lease."""
    now = timezone.now()
    return any(
        collector_owner(row.name, row.token) == owner and lease_is_held(row, now)
        for row in CollectorLease.objects.filter(released_at__isnull=True).only(
            "name", "token", "released_at", "heartbeat_at", "heartbeat_every"
        )
    )


def collector_address(name: str) -> str:
    """The owner tag of the live collector of home ``name``, or :class:`CollectorNotRunning`
    (:class:`NoSharedChannelLayer` when a command could not reach it)."""
    row = CollectorLease.objects.filter(name=name).first()
    if row is None:
        raise CollectorNotRunning(say("collector-never-started", home=name))
    now = timezone.now()
    if not lease_is_held(row, now):
        age = max(0.0, (now - row.heartbeat_at).total_seconds())
        when = f"{row.heartbeat_at:%Y-%m-%d %H:%M:%S}"
        raise CollectorNotRunning(say("collector-gone", home=name, when=when, age=f"{age:.0f}"))
    layer = get_channel_layer()
    here = (socket.gethostname(), os.getpid())
    if isinstance(layer, InMemoryChannelLayer) and (row.host, row.pid) != here:
        raise NoSharedChannelLayer(
            say("collector-elsewhere", home=name, where=f"{row.host}:{row.pid}")
        )
    return collector_owner(row.name, row.token)


class Refused(Exception):
    """A sealed message that must not be acted on; the message says why."""


def seal(message: Mapping[str, Any], *, salt: str = COMMAND_SALT) -> dict[str, Any]:
    """``message`` as sent over the channel layer: its ``type`` and the whole of it signed
    and timed."""
    return {"type": message["type"], SEALED: signing.dumps(dict(message), salt=salt)}


class _Seen:
    """Signatures opened in the last :data:`COMMAND_MAX_AGE` seconds: a copy of a message
    sent again is refused."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_time(self, signature: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if len(self._until) > 1024:
                self._until = {s: t for s, t in self._until.items() if t > now}
            if self._until.get(signature, 0.0) > now:
                return False
            self._until[signature] = now + COMMAND_MAX_AGE
            return True


_seen = _Seen()


def open_sealed(message: Mapping[str, Any], *, salt: str = COMMAND_SALT) -> dict[str, Any]:
    """What a sealed message says, or :class:`Refused` saying why not."""
    sealed = message.get(SEALED)
    if not isinstance(sealed, str):
        raise Refused("not signed")
    try:
        opened = signing.loads(sealed, salt=salt, max_age=COMMAND_MAX_AGE)
    except signing.SignatureExpired:
        raise Refused(f"signed more than {COMMAND_MAX_AGE} s ago") from None
    except signing.BadSignature:
        raise Refused("not signed with this installation's secret key, or changed") from None
    if not isinstance(opened, dict) or opened.get("type") != message.get("type"):
        raise Refused("its type was changed")
    if not _seen.first_time(sealed.rsplit(":", 1)[-1]):
        raise Refused("sent before (a replay)")
    return opened


def send_command(name: str, message: Mapping[str, Any]) -> None:
    """Send ``message`` (its ``type`` a registered kind) to home ``name``'s collector."""
    layer = get_channel_layer()
    if layer is None:
        raise CollectorNotRunning(say("no-channel-layer"))
    async_to_sync(layer.group_send)(collector_group(name), seal(message))


class CollectorSilent(DshError):
    """The collector was sent a question and did not answer in time."""


def ask_collector(name: str, message: Mapping[str, Any], *, timeout: float) -> dict[str, Any]:
    """Send ``message`` to home ``name``'s collector and wait (at most ``timeout`` s) for its
    answer (:func:`answer`), or :class:`CollectorSilent`. The caller has checked the
    collector is running (:func:`collector_address`)."""
    layer = get_channel_layer()
    if layer is None:
        raise CollectorNotRunning(say("no-channel-layer"))

    async def ask() -> dict[str, Any]:
        channel = await layer.new_channel()
        await layer.group_send(collector_group(name), seal({**message, "reply_to": channel}))
        deadline = time.monotonic() + timeout
        try:
            while True:
                got = await asyncio.wait_for(layer.receive(channel), deadline - time.monotonic())
                try:
                    return open_sealed(got, salt=ANSWER_SALT)
                except Refused as refused:
                    log.warning("an answer from the collector of %s refused: %s", name, refused)
        except TimeoutError:
            raise CollectorSilent(
                f"the collector of {name} did not answer within {timeout:.0f} s"
            ) from None

    return async_to_sync(ask)()


def answer(message: Mapping[str, Any], reply: Mapping[str, Any]) -> None:
    """In a command handler: send ``reply`` to whoever :func:`ask_collector` ``message``."""
    layer = get_channel_layer()
    reply_to = message.get("reply_to")
    if layer is None or not isinstance(reply_to, str):
        return
    sealed = seal({"type": COLLECTOR_ANSWER, **reply}, salt=ANSWER_SALT)
    async_to_sync(layer.send)(reply_to, sealed)


async def listen_for_commands(place: CollectorPlace) -> None:
    """Run the commands sent to ``place``'s collector until cancelled; a failing channel
    layer is logged and joined again after a back-off."""
    layer = get_channel_layer()
    if layer is None:
        log.warning("collector %s: no channel layer, so no commands", place.name)
        return
    group = collector_group(place.name)
    backoff = timing.COLLECT_WRITE_EVERY
    outage = Outage(
        f"collector {place.name}'s commands",
        first=timing.COLLECT_WRITE_EVERY,
        most=timing.OUTAGE_RETRY_MAX,
        log=log,
    )
    while True:
        try:
            channel = await layer.new_channel()
            await layer.group_add(group, channel)
            outage.ended("; listening again")
            backoff = timing.COLLECT_WRITE_EVERY
            helpers = [
                asyncio.create_task(_keep_joined(layer, group, channel)),
                asyncio.create_task(_pick_up(place)),
            ]
            try:
                while True:
                    _dispatch_sealed(await layer.receive(channel), place)
            finally:
                for helper in helpers:
                    helper.cancel()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if layer_unreachable(error):
                await asyncio.sleep(outage.failed(error))
                continue
            log.exception(
                "collector %s: the channel layer failed; listening again in %.1f s",
                place.name,
                backoff,
            )
            await asyncio.sleep(backoff)
            backoff = min(timing.BACKOFF_MAX, backoff * 2)


async def _keep_joined(layer: Any, group: str, channel: str) -> None:
    while True:
        await asyncio.sleep(REJOIN_EVERY)
        try:
            await layer.group_add(group, channel)
        except Exception:
            log.exception("joining %s again failed; trying again in %.0f s", group, REJOIN_EVERY)


async def _pick_up(place: CollectorPlace) -> None:
    """Run the work waiting in the database for this collector, now and every
    :data:`~dshweb.live.timing.PICK_UP_EVERY` seconds."""
    while True:
        try:
            found = await asyncio.to_thread(waiting_commands, place)
        except Exception as error:
            if not database_unreachable(error):  # an outage is said once, by the collector
                log.exception("collector %s: looking for waiting commands failed", place.name)
            found = []
        for message in found:
            _dispatch(message, place)
        await asyncio.sleep(timing.PICK_UP_EVERY)


def waiting_commands(place: CollectorPlace) -> list[dict[str, Any]]:
    """Every command whose work waits in the database for ``place``'s collector."""
    try:
        finders: list[PendingFinder] = [import_string(path) for path in _finders.values()]
        return [message for finder in finders for message in finder(place)]
    finally:
        close_old_connections()


def _dispatch_sealed(message: Mapping[str, Any], place: CollectorPlace) -> None:
    """A message from the channel layer: acted on only once it is opened."""
    try:
        opened = open_sealed(message)
    except Refused as refused:
        log.warning(
            "collector %s: refused a command %r: %s",
            place.name,
            str(message.get("type", ""))[:80],
            refused,
        )
        return
    _dispatch(opened, place)


def _dispatch(message: Mapping[str, Any], place: CollectorPlace) -> None:
    kind = str(message.get("type", ""))
    if stop_asked():  # a Compact row stays requested: the next collector closes it
        log.info("collector %s: stopping; a command %r is left for later", place.name, kind)
        return
    path = _handlers.get(kind)
    if path is None:
        log.warning("collector %s: no handler for a command %r", place.name, kind)
        return
    handler: CommandHandler = import_string(path)
    # A handler may wait minutes on an engine: never on the loop.
    threading.Thread(
        target=_run, args=(handler, message, place), name=f"dshweb-command-{kind}", daemon=True
    ).start()


def _run(handler: CommandHandler, message: Mapping[str, Any], place: CollectorPlace) -> None:
    try:
        handler(message, place)
    except Exception:
        log.exception("collector %s: the command %r failed", place.name, message.get("type"))
    finally:
        close_old_connections()
