"""One socket's renders, newest first: what a page's socket renders and sends after each
announcement of the publisher (:mod:`dshweb.live.publisher`), one render at a time.

A socket asks for a render (a callable and its argument) when an announcement arrives.
The render runs after the one running now; while it waits, a second ask of the same
render is merged into it (``merge(waiting, new)``: :func:`newer_version` for a session,
:func:`merged_changes` for the sessions list), so a socket never works through a backlog
of states its page has already passed. A render that fails is logged with its traceback
and the socket goes on with the next ask.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

Render = Callable[[Any], object]
"""A render of the socket's: what its page shows now, given the merged asks."""
Send = Callable[[Render, Any], Awaitable[None]]
"""The socket's way to run a render (off the event loop) and send what it made."""


class RenderQueue:
    """The renders ``send`` runs for one socket (``what`` names it in the log)."""

    def __init__(self, send: Send, what: str) -> None:
        self.send = send
        self.what = what
        self._waiting: dict[Render, Any] = {}
        """Renders asked for and not started: each with its merged argument."""
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    def ask(self, render: Render, value: Any, merge: Callable[[Any, Any], Any]) -> None:
        """Run ``render(value)`` after the render running now (from the event loop); while
        it waits, a second ask is merged into the first (``merge(waiting, new)``)."""
        if self._stopped:
            return
        waiting = self._waiting
        waiting[render] = merge(waiting[render], value) if render in waiting else value
        if self._task is None:
            self._task = asyncio.create_task(self._drain())

    @property
    def idle(self) -> bool:
        """No render runs or waits."""
        return self._task is None

    def stop(self) -> None:
        """Run nothing more (the socket left)."""
        self._stopped = True
        if self._task is not None:
            self._task.cancel()

    async def _drain(self) -> None:
        try:
            while self._waiting:
                render, value = next(iter(self._waiting.items()))
                del self._waiting[render]
                await self.send(render, value)
        except Exception:
            log.exception("socket %s: an update could not be sent", self.what)
        finally:
            self._task = None


def merged_changes(
    waiting: tuple[set[tuple[str, str]], dict[str, int]],
    new: tuple[set[tuple[str, str]], dict[str, int]],
) -> tuple[set[tuple[str, str]], dict[str, int]]:
    """Two list announcements as one: every session either names, each home's newest
    version."""
    versions = dict(waiting[1])
    for home, version in new[1].items():
        versions[home] = max(version, versions.get(home, version))
    return waiting[0] | new[0], versions


def newer_version(waiting: int | None, new: int | None) -> int | None:
    """Two session announcements as one: the newer version (None: read what is there)."""
    if waiting is None or new is None:
        return None
    return max(waiting, new)
