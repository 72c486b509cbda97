"""A socket's render queue: one render at a time, asks merged while they wait, a failure
logged and the next ask run, nothing after stop (the consumers' own test drives it
through a session socket: tests/live/test_sockets.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from dshweb.live.renders import RenderQueue, merged_changes, newer_version


class _Socket:
    """Renders that wait for the test, and what each was run with, in order."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.ran: list[tuple[str, Any]] = []

    async def send(self, render: Callable[[Any], object], value: Any) -> None:
        await self.gate.wait()
        self.ran.append((str(render(value)), value))


async def _settled(queue: RenderQueue) -> None:
    for _ in range(200):
        if queue.idle:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the queue did not settle")


def page(value: Any) -> str:
    return "page"


def status(value: Any) -> str:
    return "status"


@pytest.mark.asyncio
async def test_asks_while_a_render_runs_merge_into_one_of_the_newest_per_render() -> None:
    socket = _Socket()
    queue = RenderQueue(socket.send, "/ws/test/")
    queue.ask(page, 3, newer_version)
    await asyncio.sleep(0.01)  # the first render runs, and waits at the gate
    for version in (4, 6, 5):
        queue.ask(page, version, newer_version)
    queue.ask(status, None, newer_version)
    assert not queue.idle
    socket.gate.set()
    await _settled(queue)
    assert socket.ran == [("page", 3), ("page", 6), ("status", None)]


@pytest.mark.asyncio
async def test_a_failed_render_is_logged_and_the_next_ask_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    socket = _Socket()
    socket.gate.set()

    def broken(value: Any) -> str:
        raise RuntimeError("no template")

    queue = RenderQueue(socket.send, "/ws/test/")
    with caplog.at_level(logging.ERROR, logger="dshweb.live.renders"):
        queue.ask(broken, 1, newer_version)
        await _settled(queue)
    assert "socket /ws/test/: an update could not be sent" in caplog.text
    assert "RuntimeError: no template" in caplog.text
    queue.ask(page, 2, newer_version)
    await _settled(queue)
    assert socket.ran == [("page", 2)]


@pytest.mark.asyncio
async def test_nothing_runs_after_stop() -> None:
    socket = _Socket()
    queue = RenderQueue(socket.send, "/ws/test/")
    queue.ask(page, 1, newer_version)
    await asyncio.sleep(0.01)
    queue.stop()  # the running render is cancelled at the gate
    queue.ask(page, 2, newer_version)
    socket.gate.set()
    await _settled(queue)
    assert socket.ran == []


def test_list_announcements_merge_their_sessions_and_newest_versions() -> None:
    waiting = ({("a", "1")}, {"a": 4, "b": 2})
    merged = merged_changes(waiting, ({("b", "9"), ("a", "1")}, {"a": 3, "b": 5}))
    assert merged == ({("a", "1"), ("b", "9")}, {"a": 4, "b": 5})
    assert newer_version(2, 7) == 7
    assert newer_version(2, None) is None  # no version known: read what is there
    assert newer_version(None, 2) is None
