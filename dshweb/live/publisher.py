"""The hub's changes, announced on the channel layer: which sessions changed, never HTML.

One publisher per event loop follows the process's hub (:mod:`dshweb.live.service`).
For each changed session it sends ``session.changed`` (its home and id, and the version
of the home's view that shows the change) to that session's group, and
``sessions.changed`` with the changed sessions (``[home, id]`` pairs, and each home's
version) to the list's group; the consumers
(:mod:`dshweb.sessions.consumers`) render what their page shows from the hub's view,
outside any lock. Announcements are coalesced to one per :data:`INTERVAL` per session
(and one per :data:`LIST_INTERVAL` for the list): the first change of a quiet session
goes out at once, later ones when the interval ends. Only groups some socket of this
process follows are told, unless the publisher is a collector's
(``only_watched=False``: the sockets are in other processes, behind the channel layer).
While the channel layer cannot be reached (its Redis restarting), what could not be sent
is kept and sent once it is back, trying again with back-off; that is said once, in one
line, not as a traceback per try.

A publisher follows any :class:`ChangeSource`: the process's hub, or a collector's writer
(:mod:`dshweb.collect.collector`), which passes a change on only once it is in the database.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from channels.layers import get_channel_layer

from dshweb.live.hub import ChangeSource, HomeChange
from dshweb.live.hubtask import HubTask, next_within
from dshweb.live.outage import Outage, layer_unreachable
from dshweb.live.protocol import (
    SESSIONS_CHANGED,
    SESSIONS_GROUP,
    SessionChanged,
    SessionsChanged,
    sent,
    session_group,
)
from dshweb.live.subscriptions import subscriptions
from dshweb.live.timing import INTERVAL, LIST_INTERVAL, OUTAGE_RETRY_MAX

log = logging.getLogger(__name__)

SENDS_AT_ONCE = 16
"""Group sends in flight together (each its own Redis connection, while it lasts)."""


class Publisher:
    def __init__(
        self,
        hub: ChangeSource,
        interval: float = INTERVAL,
        list_interval: float = LIST_INTERVAL,
        *,
        only_watched: bool = True,
    ) -> None:
        self.hub = hub
        self.interval = interval
        self.list_interval = list_interval
        self.only_watched = only_watched
        self._changes: asyncio.Queue[HomeChange] = asyncio.Queue()
        self._pending: dict[tuple[str, str], bool] = {}
        """(home, session id) → gone, waiting for its interval to end."""
        self._sent_at: dict[tuple[str, str], float] = {}
        self._list_ids: set[tuple[str, str]] = set()
        self._list_sent_at = 0.0
        self._versions: dict[str, int] = {}
        """Each home's newest view version taken: a message says which version shows it."""
        self._outage = Outage("publisher", first=max(interval, 0.5), most=OUTAGE_RETRY_MAX, log=log)
        self._resume_at = 0.0
        """While the layer cannot be reached: when to try again."""

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        unsubscribe = self.hub.subscribe(
            lambda change: loop.call_soon_threadsafe(self._changes.put_nowait, change)
        )
        try:
            while True:
                due = self._next_due()
                wait = None if due is None else max(0.0, due - time.monotonic())
                for change in await next_within(self._changes, wait):
                    self._take(change)
                await self._send_due(time.monotonic())
        finally:
            unsubscribe()

    def _take(self, change: HomeChange) -> None:
        home = change.view.name
        self._versions[home] = max(change.view.version, self._versions.get(home, 0))
        for session_id in change.changed:
            self._pending[home, session_id] = False
        for session_id in change.removed:
            self._pending[home, session_id] = True
        self._list_ids.update((home, s) for s in change.changed | change.removed)

    def _next_due(self) -> float | None:
        dues = [self._sent_at.get(s, 0.0) + self.interval for s in self._pending]
        if self._list_ids:
            dues.append(self._list_sent_at + self.list_interval)
        return max(min(dues), self._resume_at) if dues else None

    async def _send_due(self, now: float) -> None:
        layer = get_channel_layer()
        if layer is None:
            self._pending.clear()
            self._list_ids.clear()
            return
        if now < self._resume_at:
            return
        messages: list[tuple[str, dict[str, Any]]] = []
        for key, gone in list(self._pending.items()):
            if now < self._sent_at.get(key, 0.0) + self.interval:
                continue
            del self._pending[key]
            if gone:
                self._sent_at.pop(key, None)
            else:
                self._sent_at[key] = now
            home, session_id = key
            group = session_group(home, session_id)
            if self._watched(group):
                changed = SessionChanged(
                    type="session.changed",
                    home=home,
                    session_id=session_id,
                    gone=gone,
                    version=self._versions.get(home, 0),
                )
                messages.append((group, sent(changed)))
        if self._list_ids and now >= self._list_sent_at + self.list_interval:
            ids, self._list_ids = [list(key) for key in sorted(self._list_ids)], set()
            self._list_sent_at = now
            if self._watched(SESSIONS_GROUP):
                versions = {home: self._versions.get(home, 0) for home, _ in ids}
                listed = SessionsChanged(type="sessions.changed", ids=ids, versions=versions)
                messages.append((SESSIONS_GROUP, sent(listed)))
        failures = await _send_all(layer, messages)
        unreachable = [e for e in failures.values() if layer_unreachable(e)]
        if len(unreachable) < len(failures):
            raise next(e for e in failures.values() if not layer_unreachable(e))
        if unreachable:
            # Announcements are the latest state: what was not sent goes again later.
            for index in failures:
                self._take_back(messages[index][1])
            self._resume_at = time.monotonic() + self._outage.failed(unreachable[0])
            return
        self._outage.ended()

    def _take_back(self, message: dict[str, Any]) -> None:
        if message["type"] == SESSIONS_CHANGED:
            self._list_ids.update((home, session_id) for home, session_id in message["ids"])
        else:
            key = (message["home"], message["session_id"])
            self._pending.setdefault(key, message["gone"])

    def _watched(self, group: str) -> bool:
        return not self.only_watched or subscriptions.watched(group)


async def _send_all(layer: Any, messages: list[tuple[str, dict[str, Any]]]) -> dict[int, Exception]:
    """Send each ``(group, message)``, :data:`SENDS_AT_ONCE` at a time (a group send is
    four round trips to Redis: one after the other, a write of ten sessions was told
    40 round trips late); the failures, by index."""
    failures: dict[int, Exception] = {}
    at_once = asyncio.Semaphore(SENDS_AT_ONCE)

    async def send(index: int, group: str, message: dict[str, Any]) -> None:
        async with at_once:
            try:
                await layer.group_send(group, message)
            except Exception as error:
                failures[index] = error

    await asyncio.gather(*(send(i, group, message) for i, (group, message) in enumerate(messages)))
    return failures


_publishing: HubTask[Publisher] = HubTask("dshweb-publisher", lambda hub, home: Publisher(hub))


def start_publisher() -> Publisher | None:
    """Start (or keep) the publisher of the process's hub on the running event loop; a web
    worker has none (its collectors publish, through the channel layer)."""
    return _publishing.start()


async def stop_publisher() -> None:
    """Stop the publisher started on this event loop, if any (tests, shutdown)."""
    await _publishing.stop()
