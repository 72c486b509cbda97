"""The open sockets of this process, each closed once its sign-in no longer holds.

Every signed-in socket is watched here while it is open (:func:`watch`). One task per
process, on the sockets' event loop, checks all of them every :data:`CHECK_EVERY` seconds
in one :func:`~dshweb.accounts.logins.logins_holding` (two queries, whatever the number of
sockets); each socket whose sign-in no longer holds is told (its ``signed_out``, which
closes it). A check also runs at once on :func:`check_soon`, which a socket calls when it
hears that its user's account changed (:mod:`dshweb.accounts.sign_outs`, through the
channel layer: every process, with Redis).

So a socket closes within a moment of its user signing out, being made inactive, changing
their password or being deleted in this process, or in any process through Redis; and
within :data:`CHECK_EVERY` seconds (and the check's own time) of anything the signals do
not see: another process on the in-memory layer (``dshweb user passwd``), an expired
session, a row changed by hand. With no socket open, nothing runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from typing import Protocol

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from dshweb.accounts.logins import Login, logins_holding
from dshweb.live.outage import Outage, database_unreachable, layer_unreachable, outage_reason
from dshweb.live.protocol import AccountChanged, account_group, sent

log = logging.getLogger(__name__)

CHECK_EVERY = 5.0
"""Seconds between two checks of every open socket's sign-in (docs/using.md)."""


class Watched(Protocol):
    """A socket: its sign-in, and how it closes when that no longer holds."""

    login: Login

    async def signed_out(self) -> None: ...


class _Checker:
    """The sockets of one event loop and the task that checks them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.sockets: dict[Watched, Login] = {}
        self.wake = asyncio.Event()
        self.failing = False
        self.outage = Outage("sign-in check", first=CHECK_EVERY, most=CHECK_EVERY, log=log)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.task is None or self.task.done():
            self.task = self.loop.create_task(self._run(), name="dshweb-socket-logins")

    async def _run(self) -> None:
        while self.sockets:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), CHECK_EVERY)
            self.wake.clear()
            if self.sockets:
                await self.check()

    async def check(self) -> None:
        """Tell each socket whose sign-in no longer holds."""
        sockets = dict(self.sockets)
        try:
            # Channels' way to the database: its connection closed after (no idle one kept
            # in a pool thread), and a broken one dropped.
            holding = await database_sync_to_async(logins_holding)(set(sockets.values()))
        except Exception as error:
            if database_unreachable(error):
                self.outage.failed(error)  # said once; the next check tries again
            elif not self.failing:  # a fault: its traceback once, not every few seconds
                log.exception("the sockets' sign-ins could not be checked")
            self.failing = True
            return
        self.failing = False
        self.outage.ended()
        for socket, login in sockets.items():
            if login not in holding and self.sockets.pop(socket, None) is not None:
                try:
                    await socket.signed_out()
                except Exception:
                    log.exception("a signed-out socket could not be closed")


_checker: _Checker | None = None


def _current() -> _Checker:
    """The checker of the running loop (a new one when the loop changed: tests)."""
    global _checker
    loop = asyncio.get_running_loop()
    if _checker is None or _checker.loop is not loop:
        _checker = _Checker(loop)
    return _checker


def watch(socket: Watched) -> None:
    """Check ``socket``'s sign-in from now on, until :func:`unwatch`."""
    checker = _current()
    checker.sockets[socket] = socket.login
    checker.start()


def unwatch(socket: Watched) -> None:
    checker = _checker
    popped = checker is not None and checker.sockets.pop(socket, None) is not None
    if popped and checker is not None and not checker.sockets:
        checker.wake.set()  # its task ends


def check_soon() -> None:
    """Check every open socket's sign-in now (a user's account changed)."""
    checker = _current()
    if checker.sockets:
        checker.wake.set()


def tell_sockets(user_id: int, *, ended: str = "") -> None:
    """Tell every open socket of user ``user_id``, in every process the channel layer
    reaches, that their account changed (``ended``: the session that signed out,
    :func:`~dshweb.live.protocol.signed_out_name`). From synchronous code (a signal)."""
    layer = get_channel_layer()
    if layer is None:
        return
    group = account_group(user_id)
    message = sent(AccountChanged(type="account.changed", ended=ended))
    loop = _checker.loop if _checker is not None else None
    if loop is not None and loop.is_running():
        # The in-memory layer's queues belong to the sockets' loop: a send through a loop
        # of this thread's own would wake no socket until something else did.
        future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        future.add_done_callback(_said)
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception as error:
        if not layer_unreachable(error):
            raise
        _unsaid(error)


def _said(future: concurrent.futures.Future[None]) -> None:
    error = future.exception()
    if error is None:
        return
    if layer_unreachable(error):
        _unsaid(error)
    else:
        log.error("an account change was not told to its sockets", exc_info=error)


def _unsaid(error: BaseException) -> None:
    log.warning(
        "an account change was not told to its sockets (%s); they close at the next check, "
        "within %.0f s",
        outage_reason(error),
        CHECK_EVERY,
    )
