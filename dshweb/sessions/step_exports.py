"""``steps.csv`` / ``steps.json``: every step of a session, read afresh from its log.

:func:`~dshweb.core.fold.steps.fold_steps` folds the log in a thread of its own, one of
at most :data:`EXPORT_THREADS` (an export waits for a free one): never a thread of the
event loop's executor, which renders every socket message and runs the alert watcher, so
no number of exports, finished or abandoned, can hold those up. Rows reach the response a
batch at a time, at most :data:`QUEUED` batches ahead of the client, so the fold waits
while the client is slow and memory holds a few batches whatever the log's length. A
client that goes away stops the fold within a slice of the log (a few milliseconds) and
frees its thread. A log that stops being readable part way ends the rows there; the JSON
says why in its last member, ``error``.

The log must be on this machine: a web worker (``DSHWEB_COLLECT=off``) answers 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Literal

from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_GET

from dshweb.config import get_config
from dshweb.core.errors import LogError
from dshweb.core.fold.steps import STEP_COLUMNS, StepRow, fold_steps
from dshweb.core.log.home import LogFile, newest_log
from dshweb.core.profile.effective import settings_table
from dshweb.live.service import collecting
from dshweb.sessions.exports import (
    BATCH,
    CSV_TYPE,
    JSON_TYPE,
    Batches,
    Row,
    csv_chunks,
    download,
    file_name,
    json_array,
    json_object,
)
from dshweb.sessions.refusals import session_or_refusal, worker_refusal

EXPORT_THREADS = 4
"""Step exports folding at once (each is a core's work while its client reads)."""
QUEUED = 4
"""Batches folded ahead of the client."""
LOOK_EVERY = 0.1
"""How often a fold waiting for the client looks whether it went away (seconds)."""

_threads = threading.BoundedSemaphore(EXPORT_THREADS)
Item = list[Row] | LogError | BaseException | None


class _Stopped(Exception):
    """The client went away: the fold stops."""


class _Handoff:
    """Batches from a fold's thread to the response on the event loop, at most
    :data:`QUEUED` ahead; ``stopped`` once the response is done with them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready: asyncio.Queue[Item] = asyncio.Queue()
        self.room = threading.Semaphore(QUEUED)
        self.stopped = threading.Event()

    def put(self, item: Item) -> None:
        """From the fold's thread: waits for room, or raises :class:`_Stopped`."""
        while not self.room.acquire(timeout=LOOK_EVERY):
            if self.stopped.is_set():
                raise _Stopped
        try:
            self.loop.call_soon_threadsafe(self.ready.put_nowait, item)
        except RuntimeError:  # the loop is closed: the server stops
            raise _Stopped from None

    async def take(self) -> Item:
        item = await self.ready.get()
        self.room.release()
        return item


class StepStream:
    """The rows of one log's step fold, as batches; ``error`` once they are all sent."""

    def __init__(self, log: LogFile, home: Path) -> None:
        self.log = log
        self.home = home
        self.error: str | None = None

    async def batches(self) -> Batches:
        handoff = _Handoff(asyncio.get_running_loop())
        while not _threads.acquire(blocking=False):
            await asyncio.sleep(LOOK_EVERY)
        try:
            worker = threading.Thread(
                target=self._produce, args=(handoff,), name="dshweb-step-export", daemon=True
            )
            worker.start()
        except BaseException:
            _threads.release()
            raise
        try:
            while True:
                item = await handoff.take()
                if item is None:
                    return
                if isinstance(item, LogError):
                    self.error = str(item)
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            handoff.stopped.set()

    def _produce(self, handoff: _Handoff) -> None:
        batch: list[Row] = []

        def on_row(row: StepRow) -> None:
            batch.append(row)
            if len(batch) >= BATCH:
                handoff.put(batch.copy())
                batch.clear()

        try:
            error = fold_steps(
                self.log,
                table=settings_table(self.home, get_config().profile),
                on_row=on_row,
                keep_going=lambda: not handoff.stopped.is_set(),
            )
            if batch:
                handoff.put(batch)
            handoff.put(error)
        except _Stopped:
            pass
        except BaseException as failure:  # to the response, which logs it
            with contextlib.suppress(_Stopped):
                handoff.put(failure)
        finally:
            _threads.release()


def step_download(
    request: HttpRequest, home: str, session_id: str, kind: Literal["csv", "json"]
) -> HttpResponseBase:
    if not collecting():
        return worker_refusal(request, "A session's every step is read from its log")
    found = session_or_refusal(request, home, session_id)
    if isinstance(found, HttpResponse):
        return found
    shown, view, _ = found
    snapshot = view.snapshot
    log = newest_log((shown.view.home / snapshot.path).parent)
    if log is None:  # gone since the hub last looked
        raise Http404(f"the log of session {session_id!r} is gone")
    stream = StepStream(log, shown.view.home)
    if kind == "csv":
        chunks, content_type = csv_chunks(STEP_COLUMNS, stream.batches()), CSV_TYPE
    else:
        head: dict[str, object] = {"home": home, "session": snapshot.session_id}
        steps = [("steps", json_array(STEP_COLUMNS, stream.batches()))]
        chunks = json_object(head, steps, lambda: {"error": stream.error})
        content_type = JSON_TYPE
    return download(chunks, content_type, file_name(session_id, f"steps.{kind}"))


@require_GET
def steps_csv(request: HttpRequest, home: str, session_id: str) -> HttpResponseBase:
    """Every step: seq, time, pressure, projected, window, threshold, percent, band and
    the usage buckets so far (:data:`~dshweb.core.fold.steps.STEP_COLUMNS`)."""
    return step_download(request, home, session_id, "csv")


@require_GET
def steps_json(request: HttpRequest, home: str, session_id: str) -> HttpResponseBase:
    return step_download(request, home, session_id, "json")
