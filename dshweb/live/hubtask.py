"""One background job per process that follows the process's hub, on the server's loop.

The publisher and the alert watcher each run as one task on the event loop the server
serves on. :meth:`HubTask.start` (called on every connection) keeps the running one, or
starts one for the current hub: a new loop (a test's) or a new hub (the settings changed)
gets a new job. A web worker (``DSHWEB_COLLECT=off``) runs none: its collectors do.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, Generic, Protocol, TypeVar

from dshweb.live.hub import ChangeSource, Hub
from dshweb.live.service import collecting, current_hub


class Job(Protocol):
    def run(self) -> Coroutine[Any, Any, None]: ...


J = TypeVar("J", bound=Job)


class HubTask(Generic[J]):
    """``make(source, home)`` makes the job of a home's changes: here the process's hub
    (:meth:`start`); in a collector its writer (:mod:`dshweb.collect.collector` runs every
    job :func:`dshweb.live.jobs.beside_hub` lists)."""

    def __init__(self, name: str, make: Callable[[ChangeSource, str], J]) -> None:
        self.name = name
        self.make = make
        self._task: asyncio.Task[None] | None = None
        self._job: J | None = None
        self._hub: Hub | None = None
        self._old: asyncio.Task[None] | None = None
        """The cancelling of the job a new one replaced (kept, so it is not collected)."""

    @property
    def job(self) -> J | None:
        """The job running now (on whichever loop started it), if any: what ``/metrics``
        reads its figures from."""
        task = self._task
        return self._job if task is not None and not task.done() else None

    def start(self) -> J | None:
        """The job of the process's hub on the running loop, started if need be."""
        if not collecting():
            return None
        loop = asyncio.get_running_loop()
        hub = current_hub()
        task = self._task
        alive = task is not None and not task.done() and task.get_loop() is loop
        if not alive or self._job is None or self._hub is not hub:
            if alive and task is not None:
                self._old = loop.create_task(_cancelled(task))
            self._job, self._hub = self.make(hub, hub.name), hub
            self._task = loop.create_task(self._job.run(), name=self.name)
        return self._job

    async def stop(self) -> None:
        """Stop the job started on this event loop, if any (tests, shutdown)."""
        task, self._task, self._job, self._hub = self._task, None, None, None
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await _cancelled(task)


T = TypeVar("T")


async def next_within(queue: asyncio.Queue[T], timeout: float | None) -> list[T]:
    """What ``queue`` holds once something is in it, or ``[]`` after ``timeout`` seconds
    (``None``: no limit). Unlike Python 3.11's ``asyncio.wait_for`` around ``get``, a
    cancel always ends it: a job's loop built on this stops when its task is cancelled
    (a test's event loop closes instead of waiting for ever)."""
    if queue.empty():
        getter = asyncio.ensure_future(queue.get())
        try:
            await asyncio.wait({getter}, timeout=timeout)
        finally:
            getter.cancel()
        if not getter.done() or getter.cancelled():
            return []
        items = [getter.result()]
    else:
        items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


async def _cancelled(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait until it has ended. Python 3.11's ``asyncio.wait_for``
    swallows a cancel that lands as the wait it guards ends (the job's loop then goes on,
    and a plain ``await`` of it never returns): the cancel is asked again until it holds."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.5)
    with contextlib.suppress(asyncio.CancelledError):
        task.result()
