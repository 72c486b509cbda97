"""The live export: a home's changes, as its hub publishes them, sent to an OpenTelemetry
collector from a thread of the export's own.

The hub's thread only notes which sessions changed (a set, under a lock held for that
alone) and wakes the export's thread: it never waits on the network, whatever the
collector does. The export's thread takes the noted sessions from the newest view the
hub published (never folding), and sends, :data:`SESSIONS_AT_ONCE` sessions a request:

- each session's readings (:mod:`dshweb.otlp.figures`), stamped now, for the sessions
  live or active in the last :data:`ACTIVE_MS` (an idle home's history is the backfill's,
  :mod:`dshweb.otlp.backfill`); every ``OTEL_METRIC_EXPORT_INTERVAL`` the live sessions'
  again, so a dashboard never sees a live session's figures go stale;
- the spans of its compactions settled since it last sent them; of those settled when it
  first sees the session, the ones that ended in the last :data:`ACTIVE_MS` (a restart's
  gap: the same ids whoever sends them, so none is a new span).

Between the hub and the network there is one entry per session at most (what changed
since the last export: a newer change replaces an older one), so the export's memory is
bounded by the home, however long a collector is out. A request the collector did not
take is dropped and counted (:data:`~dshweb.otlp.send.COUNTS`, ``/metrics``), its
sessions noted again to be sent from the newest view, and the next try waits, doubling
from :data:`RETRY_FIRST` to :data:`RETRY_MOST` seconds; the outage is said once when it
starts and once when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable

from dshweb.config import get_config
from dshweb.core.fold.cost import RateBook
from dshweb.environment_otlp import OtlpTarget
from dshweb.installed import add_extra
from dshweb.live.hub import ChangeSource, HomeChange, HomeView, SessionView
from dshweb.live.hubtask import HubTask
from dshweb.otlp.figures import CompactionSpan, SessionReadings, compaction_spans, session_readings
from dshweb.otlp.send import EXTRA, Sender, exporters_installed

log = logging.getLogger(__name__)

ACTIVE_MS = 60 * 60 * 1000
"""A session idle for longer (and not live) is not exported live."""
SESSIONS_AT_ONCE = 200
"""Sessions whose figures go in one request."""
RETRY_FIRST = 1.0
RETRY_MOST = 60.0


class LiveExport:
    """Follows ``source`` (a hub, or a collector's writer) and sends home ``home``'s
    changes to ``target``; :meth:`start` and :meth:`stop` its thread."""

    def __init__(
        self,
        source: ChangeSource,
        home: str,
        target: OtlpTarget,
        *,
        rates: Callable[[], RateBook] = lambda: get_config().rate_book,
        timeout: float | None = None,
    ) -> None:
        self.source = source
        self.home = home
        self.target = target
        self.rates = rates
        self.sender = Sender(target, timeout=timeout)
        self.rounds = 0
        """Exports tried (each a request per signal at most)."""
        self.outage_since: float | None = None
        """When the collector last stopped taking what was sent (``None``: it takes it)."""
        self._lock = threading.Lock()
        self._view: HomeView | None = None
        self._pending: set[str] = set()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._sent: dict[str, set[int]] = {}
        """Each session's compactions whose span went out (by their first event's seq)."""
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._started_ms = int(time.time() * 1000)
        self._retry_at = 0.0
        self._delay = RETRY_FIRST

    # -- the hub's thread ------------------------------------------------------------------

    def _take(self, change: HomeChange) -> None:
        """A hub listener: note what changed, wake the export (nothing else, never waits)."""
        with self._lock:
            self._view = change.view
            self._pending.update(change.changed)
            self._pending.update(change.removed)
        self._wake.set()

    # -- the export's thread ---------------------------------------------------------------

    def start(self) -> LiveExport:
        self._unsubscribe = self.source.subscribe(self._take)
        view = self.source.view()
        if view is not None:
            with self._lock:
                self._view = self._view or view
                self._pending.update(view.sessions)
        self._thread = threading.Thread(target=self._run, name="dshweb-otlp", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 15.0) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.sender.close()

    def _run(self) -> None:
        next_tick = time.monotonic() + self.target.interval
        while not self._stop.is_set():
            self._wake.clear()
            now = time.monotonic()
            if now >= next_tick:
                next_tick = now + self.target.interval
                self._note_live()
            if now >= self._retry_at and self._pending:
                try:
                    self._export()
                except Exception:
                    log.exception("the OpenTelemetry export of %s failed; going on", self.home)
                    self._retry_at = time.monotonic() + RETRY_MOST
                continue
            due = next_tick if not self._pending else min(next_tick, self._retry_at)
            self._wake.wait(max(0.0, due - time.monotonic()))

    def _note_live(self) -> None:
        with self._lock:
            view = self._view
            if view is not None:
                self._pending.update(i for i, v in view.sessions.items() if v.snapshot.live)

    def _export(self) -> None:
        """Send what the noted sessions show now, a request at a time, until one fails."""
        with self._lock:
            view, ids, self._pending = self._view, sorted(self._pending), set()
        if view is None:
            return
        book = self.rates()
        now_ms = int(time.time() * 1000)
        for start in range(0, len(ids), SESSIONS_AT_ONCE):
            chunk = ids[start : start + SESSIONS_AT_ONCE]
            if not self._send(view, chunk, book, now_ms):
                with self._lock:
                    self._pending.update(ids[start:])
                return

    def _send(self, view: HomeView, ids: Iterable[str], book: RateBook, now_ms: int) -> bool:
        readings: list[SessionReadings] = []
        spans: dict[str, list[CompactionSpan]] = {}
        for session_id in ids:
            shown = view.sessions.get(session_id)
            if shown is None:
                self._sent.pop(session_id, None)
                continue
            if not self._active(shown, now_ms):
                continue
            shot = shown.snapshot
            readings.append(
                session_readings(shot, shown.gauge, home=self.home, book=book, at_ms=now_ms)
            )
            spans_now = compaction_spans(shot, home=self.home, book=book)
            sent = self._sent.get(session_id)
            if sent is None:  # first seen: what ended before the last hour is the backfill's
                since = self._started_ms - ACTIVE_MS
                sent = self._sent[session_id] = {s.seq for s in spans_now if s.end_ms < since}
            new = [s for s in spans_now if s.seq not in sent]
            if new:
                spans[session_id] = new
        self.rounds += 1
        if not self.sender.send_readings(self.home, readings):
            return self._failed()
        if spans and not self.sender.send_spans(
            self.home, (s for found in spans.values() for s in found)
        ):
            return self._failed()
        for session_id, found in spans.items():
            self._sent.setdefault(session_id, set()).update(s.seq for s in found)
        self._worked()
        return True

    @staticmethod
    def _active(view: SessionView, now_ms: int) -> bool:
        shot = view.snapshot
        return view.read_to_end and (shot.live or (shot.last_time or 0) >= now_ms - ACTIVE_MS)

    def _failed(self) -> bool:
        if self.outage_since is None:
            self.outage_since = time.monotonic()
            self._delay = RETRY_FIRST
            log.warning(
                "OpenTelemetry export of %s: the collector did not take it (%s); what "
                "changes is sent again once it does, trying again every %.0f s at most",
                self.home,
                self.sender.last_problem,
                RETRY_MOST,
            )
        self._retry_at = time.monotonic() + self._delay
        self._delay = min(RETRY_MOST, self._delay * 2)
        return False

    def _worked(self) -> None:
        if self.outage_since is not None:
            log.warning(
                "OpenTelemetry export of %s: the collector takes it again after %.0f s",
                self.home,
                time.monotonic() - self.outage_since,
            )
            self.outage_since = None


class ExportJob:
    """The job beside a home's hub (:func:`dshweb.live.jobs.beside_hub`): the live export
    while ``DSHWEB["OTLP"]`` says it is on, else nothing."""

    def __init__(self, source: ChangeSource, home: str) -> None:
        self.source = source
        self.home = home
        self.export: LiveExport | None = None

    async def run(self) -> None:
        target = get_config().otlp
        if target.live and not exporters_installed():
            log.warning(
                "OpenTelemetry export is on, but its exporters are not installed: %s",
                add_extra(EXTRA),
            )
        if not target.live or not exporters_installed():
            await asyncio.Event().wait()  # nothing to do, until cancelled
            return
        self.export = LiveExport(self.source, self.home, target).start()
        log.info(
            "OpenTelemetry export of %s to %s and %s",
            self.home,
            target.metrics_url,
            target.traces_url,
        )
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.to_thread(self.export.stop)


exporting: HubTask[ExportJob] = HubTask("dshweb-otlp", ExportJob)
