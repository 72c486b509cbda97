"""One watcher per process: follows the whole DSH home and pushes what changed.

It waits on the kernel's file notifications (``watchfiles``) for anything under
``sessions/`` and the profile patch files, folds only the session folders that changed
(in a worker thread: reading and decompressing never block the event loop), and sends
each changed session's fragments to its Channels group and its list row to the list
group. Updates are the full latest state and coalesced to one per ``interval`` per
session: the first change goes out at once, later ones wait for the interval to end.
Liveness (a lock taken or released changes no file) is re-read every ``liveness_every``
seconds, and a full rescan every ``rescan_every`` seconds catches anything missed.
Errors are logged with their traceback and the watcher starts over after a back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from channels.layers import get_channel_layer
from watchfiles import Change, watch

from dshweb.core.listing import SessionEntry
from dshweb.dashboard import fragments
from dshweb.dashboard.selectors import SharedHome, shared_home
from dshweb.live.groups import SESSIONS_GROUP, fragment_message, session_group, subscriptions
from dshweb.live.timing import (
    BACKOFF_MAX,
    INTERVAL,
    LIVENESS_EVERY,
    MISSING_HOME_RETRY,
    NOTIFY_MAX_MS,
    NOTIFY_STEP_MS,
    RESCAN_EVERY,
    TICK,
)

log = logging.getLogger("dshweb.live")


@dataclass(slots=True)
class Outbox:
    """What one pass sends: (group, html) pairs, built off the event loop."""

    messages: list[tuple[str, str]] = field(default_factory=list)

    def add(self, group: str, html: str) -> None:
        self.messages.append((group, html))


@dataclass(slots=True)
class HomeWatcher:
    shared: SharedHome = field(default_factory=lambda: shared_home)
    interval: float = INTERVAL
    tick: float = TICK
    liveness_every: float = LIVENESS_EVERY
    rescan_every: float = RESCAN_EVERY
    published: dict[Path, tuple[int, str]] = field(default_factory=dict)
    sent_at: dict[Path, float] = field(default_factory=dict)
    next_due: float | None = None
    """When the earliest change held back by the interval may go out."""
    started: bool = False
    loop: asyncio.AbstractEventLoop | None = None
    queue: asyncio.Queue[Notification] | None = None

    async def run(self) -> None:
        """Follow the home for ever; start over after any failure."""
        backoff = 1.0
        while True:
            try:
                await self._follow()
                backoff = 1.0
            except asyncio.CancelledError:
                raise
            except FileNotFoundError:
                await asyncio.sleep(MISSING_HOME_RETRY)
            except Exception:
                log.exception("the home watcher failed; starting over in %.0f s", backoff)
                await asyncio.sleep(backoff)
                backoff = min(BACKOFF_MAX, backoff * 2)

    async def _follow(self) -> None:
        home = await asyncio.to_thread(self._home)
        if not home.is_dir():
            raise FileNotFoundError(home)
        await self._pass(None, quiet=not self.started)
        self.started = True
        last_liveness = last_rescan = time.monotonic()
        async with _notifications(home) as changes:
            self.loop, self.queue = asyncio.get_running_loop(), changes
            while True:
                wait = self.tick
                if self.next_due is not None:
                    wait = max(0.0, min(wait, self.next_due - time.monotonic()))
                try:
                    batch = await asyncio.wait_for(changes.get(), timeout=wait)
                except TimeoutError:
                    batch = set()
                if isinstance(batch, BaseException):
                    raise batch
                now = time.monotonic()
                paths: set[Path] | None = {Path(p) for _, p in batch}
                if paths and any(not _under_sessions(home, p) for p in paths):
                    paths = None  # a profile patch changed: every compaction point may move
                liveness = now - last_liveness >= self.liveness_every
                if now - last_rescan >= self.rescan_every:
                    paths, last_rescan = None, now
                if liveness:
                    last_liveness = now
                due = self.next_due is not None and now >= self.next_due
                if paths == set() and not liveness and not due:
                    continue
                await self._pass(paths, liveness=liveness)

    def kick(self, session_id: str) -> None:
        """Publish ``session_id`` again although its log did not change (from any
        thread): something shown beside it changed, e.g. a compaction request's state."""
        with self.shared.lock:
            index = self.shared.index()
            folders = [f for f, t in index.trackers.items() if t.session_id == session_id]
            for folder in folders:
                index.trackers[folder].touch()
        loop, queue = self.loop, self.queue
        if loop is not None and queue is not None and folders:
            batch = {(Change.modified, str(folder)) for folder in folders}
            loop.call_soon_threadsafe(queue.put_nowait, batch)

    def _home(self) -> Path:
        with self.shared.lock:
            return self.shared.index().home

    async def _pass(
        self, changed: Iterable[Path] | None, *, liveness: bool = True, quiet: bool = False
    ) -> None:
        outbox = await asyncio.to_thread(self._fold_and_render, changed, liveness, quiet)
        layer = get_channel_layer()
        if layer is None:
            return
        for group, html in outbox.messages:
            await layer.group_send(group, fragment_message(html))

    def _fold_and_render(
        self, changed: Iterable[Path] | None, liveness: bool, quiet: bool
    ) -> Outbox:
        outbox = Outbox()
        now = time.monotonic()
        self.next_due = None
        with self.shared.lock:
            index = self.shared.index()
            if changed is None or changed:
                index.refresh(changed)
            if liveness:
                index.refresh_liveness()
            for folder in [f for f in self.published if f not in index.trackers]:
                _, session_id = self.published.pop(folder)
                self.sent_at.pop(folder, None)
                if not quiet:
                    outbox.add(SESSIONS_GROUP, fragments.row_removed_html(session_id))
                    outbox.add(session_group(session_id), fragments.session_gone_html())
            for folder, tracker in index.trackers.items():
                if self.published.get(folder, (-1, ""))[0] == tracker.version:
                    continue
                due = self.sent_at.get(folder, 0.0) + self.interval
                if now < due:
                    self.next_due = due if self.next_due is None else min(self.next_due, due)
                    continue
                snapshot = index.snapshot(folder)
                reading = index.reading_of(snapshot)
                self.published[folder] = (tracker.version, snapshot.session_id)
                if quiet:
                    continue
                self.sent_at[folder] = now
                if subscriptions.watched(SESSIONS_GROUP):
                    entry = SessionEntry(snapshot, reading, depth=0, orphan=False)
                    outbox.add(SESSIONS_GROUP, fragments.rows_html([entry]))
                group = session_group(snapshot.session_id)
                if subscriptions.watched(group):  # render only what a socket shows
                    outbox.add(group, fragments.session_html(snapshot, reading))
        return outbox


Notification = set[tuple[Change, str]] | BaseException


@contextlib.asynccontextmanager
async def _notifications(home: Path) -> AsyncIterator[asyncio.Queue[Notification]]:
    """Kernel file notifications for ``home``, from a daemon thread into a queue.

    A daemon thread (not ``awatch``'s worker) so that a server shutting down never
    waits for it.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Notification] = asyncio.Queue()
    stop = threading.Event()

    def follow() -> None:
        try:
            for batch in watch(
                home,
                watch_filter=lambda change, path: _relevant(home, change, path),
                step=NOTIFY_STEP_MS,
                debounce=NOTIFY_MAX_MS,
                rust_timeout=1000,
                yield_on_timeout=True,
                stop_event=stop,
                raise_interrupt=False,
            ):
                if batch:
                    loop.call_soon_threadsafe(queue.put_nowait, batch)
        except Exception as error:  # handed to the event loop, which starts over
            loop.call_soon_threadsafe(queue.put_nowait, error)

    thread = threading.Thread(target=follow, name="dshweb-notify", daemon=True)
    thread.start()
    try:
        yield queue
    finally:
        stop.set()


def _under_sessions(home: Path, path: Path) -> bool:
    return path.is_relative_to(home / "sessions")


def _relevant(home: Path, change: Change, path: str) -> bool:
    """Session logs and folders, and the patch files that set the compaction point."""
    target = Path(path)
    if _under_sessions(home, target):
        return not target.name.endswith((".tmp", ".lock"))
    return target.name == "cordis.patch.yml" or target.name == "package.json"


_watcher: HomeWatcher | None = None
_task: asyncio.Task[Any] | None = None


def start_watcher() -> HomeWatcher:
    """Start the process's one watcher on the running event loop (idempotent)."""
    global _watcher, _task
    loop = asyncio.get_running_loop()
    if _task is None or _task.done() or _task.get_loop() is not loop:
        _watcher = HomeWatcher()
        _task = loop.create_task(_watcher.run(), name="dshweb-watcher")
    assert _watcher is not None
    return _watcher


def kick_session(session_id: str) -> None:
    """Ask the running watcher, if any, to publish ``session_id`` again (any thread)."""
    if _watcher is not None:
        _watcher.kick(session_id)


async def stop_watcher() -> None:
    """Stop the watcher started on this event loop, if any (tests, shutdown)."""
    global _watcher, _task
    task, _task, _watcher = _task, None, None
    if task is not None and task.get_loop() is asyncio.get_running_loop():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
