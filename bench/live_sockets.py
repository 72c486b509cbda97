"""Browser sockets for the live benchmark, and the ledger of frames they resolve.

A :class:`Client` is one page's socket: a session page's (``session_id``) or the
sessions list's. Its on-connect message is the state, never an update; an update
resolves every frame of its session up to the ``last seq N`` it shows. A socket the
server closes is opened again after a full-jitter back-off (as htmx's ws extension
does), and the state it then gets resolves pending frames without a latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import websockets
from bench_server import HOST, WS_MAX_SIZE, BenchError, Server, ws_headers

LAST_SEQ = re.compile(rb"last seq (\d+)")


@dataclass
class Ledger:
    """Frames written per session: (last seq, fsync time), and what became of them."""

    written: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    history: dict[str, list[float]] = field(default_factory=dict)
    last_seq: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    resynced: int = 0
    baseline: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wrote(self, session_id: str, last_seq: int, at: float) -> None:
        with self.lock:
            self.written.setdefault(session_id, []).append((last_seq, at))
            self.history.setdefault(session_id, []).append(at)
            self.last_seq[session_id] = last_seq

    def arrived(self, session_id: str, last_seq: int, at: float, *, update: bool) -> None:
        """Frames up to ``last_seq`` reached the browser: by an update (a latency) or
        by the state a (re)connected socket was sent (no latency)."""
        with self.lock:
            pending = self.written.get(session_id, [])
            done = [t for seq, t in pending if seq <= last_seq]
            self.written[session_id] = [(s, t) for s, t in pending if s > last_seq]
            if update:
                self.latencies.extend(at - t for t in done)
            else:
                self.resynced += len(done)

    def pending(self, session_ids: list[str]) -> int:
        with self.lock:
            return sum(len(self.written.get(s, [])) for s in session_ids)


@dataclass
class Client:
    """One browser socket: the session page's (``session_id``) or the list's."""

    server: Server
    ledger: Ledger
    session_id: str | None
    rng: random.Random
    home: str = "local"
    """The home of ``session_id``."""
    ws: Any = None
    first_size: int | None = None
    failure: str | None = None
    states: int = 0
    updates: int = 0
    unmatched: int = 0
    reconnects: int = 0
    max_size: int = 0

    @property
    def path(self) -> str:
        if self.session_id is None:
            return "/ws/sessions/"
        return f"/ws/homes/{self.home}/sessions/{self.session_id}/"

    async def open(self, timeout: float) -> bool:
        """Connect and take the on-connect state (never an update)."""
        url = f"ws://{HOST}:{self.server.port}{self.path}"
        try:
            async with asyncio.timeout(timeout):
                self.ws = await websockets.connect(
                    url, additional_headers=ws_headers(self.server), max_size=WS_MAX_SIZE
                )
                message = await self.ws.recv()
        except TimeoutError:
            self.failure = f"no state in {timeout:.0f} s"
        except websockets.ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd is not None else "none"
            self.failure = f"closed {code} before its state"
        except (OSError, websockets.InvalidHandshake) as error:
            self.failure = f"{type(error).__name__}: {error}"
        if self.failure is not None:
            await self.close()
            return False
        data = message.encode() if isinstance(message, str) else message
        self.first_size = self.first_size or len(data)
        self.max_size = max(self.max_size, len(data))
        self.states += 1
        if self.session_id is not None:
            found = LAST_SEQ.search(data)
            if found is None:
                raise BenchError(f"{self.path}: its state shows no 'last seq N'")
            self.ledger.arrived(self.session_id, int(found.group(1)), 0.0, update=False)
        return True

    async def follow(self, until: float, ws_timeout: float) -> None:
        """Receive updates until ``until``; reconnect (full-jitter back-off) if closed."""
        attempt = 0
        while time.monotonic() < until:
            if self.ws is None:
                delay = self.rng.uniform(0, min(64.0, 2.0**attempt))
                await asyncio.sleep(min(delay, max(0.0, until - time.monotonic())))
                if time.monotonic() >= until:
                    return
                self.reconnects += 1
                attempt += 1
                self.failure = None
                if not await self.open(min(ws_timeout, max(0.1, until - time.monotonic()))):
                    continue
                attempt = 0
            try:
                message = await asyncio.wait_for(self.ws.recv(), until - time.monotonic())
            except TimeoutError:
                return
            except websockets.ConnectionClosed:
                self.ws = None
                continue
            at = time.monotonic()
            data = message.encode() if isinstance(message, str) else message
            self.max_size = max(self.max_size, len(data))
            self.updates += 1
            if self.session_id is not None:
                found = LAST_SEQ.search(data)
                if found is None:
                    self.unmatched += 1
                else:
                    self.ledger.arrived(self.session_id, int(found.group(1)), at, update=True)

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
            self.ws = None
