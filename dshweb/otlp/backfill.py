"""A home's whole history sent to an OpenTelemetry collector once (``dshweb export-otlp``),
with the events' own timestamps.

Each session's log is folded from its first byte (the same core as the hub's, in this
process: the hub of a running server is not asked), and its readings
(:mod:`dshweb.otlp.figures`) are taken at the end of each :data:`STEP_MS` in which it had
events, as they stood after the last of them and stamped with that event's time, and
once more after its last event; then the span of each settled compaction. Every value is
a function of the log alone (and of the rates, ``DSHWEB_PRICE_AS`` and
``DSHWEB_PEAK_WINDOWS``): the cumulative series count from the session's start, the
spans' ids are digests of the home's name, the session and the compaction. So a second
run sends the very same data points and spans, and a backend keeps each once; with
``since``, only those stamped (spans: ended) at or after it, the same ones a full run
sends.

A request the collector does not take ends the run (:class:`Stopped`, with what was
sent so far): run it again once the collector answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import check_home, session_logs
from dshweb.core.log.wire import AnyEvent
from dshweb.otlp.figures import CompactionSpan, SessionReadings, compaction_spans, session_readings
from dshweb.otlp.send import Sender

STEP_MS = 60_000
"""A session's readings are taken once per minute it was at work (at most)."""
POINTS_AT_ONCE = 5_000
"""Data points in one request."""
SPANS_AT_ONCE = 1_000


@dataclass(slots=True)
class Report:
    sessions: int = 0
    points: int = 0
    spans: int = 0


class Stopped(Exception):
    """The collector did not take a request: the run ended there."""

    def __init__(self, report: Report, problem: str) -> None:
        super().__init__(problem)
        self.report = report


class _Batches:
    def __init__(self, sender: Sender, home: str, report: Report) -> None:
        self.sender, self.home, self.report = sender, home, report
        self.readings: list[SessionReadings] = []
        self.points = 0
        self.spans: list[CompactionSpan] = []

    def add_readings(self, readings: SessionReadings) -> None:
        self.readings.append(readings)
        self.points += len(readings.readings)
        if self.points >= POINTS_AT_ONCE:
            self.flush_readings()

    def add_spans(self, spans: list[CompactionSpan]) -> None:
        self.spans += spans
        if len(self.spans) >= SPANS_AT_ONCE:
            self.flush_spans()

    def flush_readings(self) -> None:
        if self.readings and not self.sender.send_readings(self.home, self.readings):
            raise Stopped(self.report, self.sender.last_problem)
        self.report.points += self.points
        self.readings, self.points = [], 0

    def flush_spans(self) -> None:
        if self.spans and not self.sender.send_spans(self.home, self.spans):
            raise Stopped(self.report, self.sender.last_problem)
        self.report.spans += len(self.spans)
        self.spans = []


class _SessionReader:
    """One session's readings as its log is folded: before each event, the readings of
    the step it ends (as the event before it left them), when it ends one."""

    def __init__(
        self,
        index: HomeIndex,
        folder: Path,
        home: str,
        book: RateBook,
        since_ms: int | None,
        step_ms: int,
        batches: _Batches,
    ) -> None:
        self.index, self.folder, self.home, self.book = index, folder, home, book
        self.since_ms, self.step_ms, self.batches = since_ms, step_ms, batches
        self.last: int | None = None
        """The newest event time read so far (never going back)."""

    def before(self, event: AnyEvent) -> None:
        time = event.time
        if not isinstance(time, int):
            return
        last = self.last
        if last is None or time > last:
            if last is not None and time // self.step_ms != last // self.step_ms:
                self._take(last)  # the step before this event's, as its last event left it
            self.last = time

    def done(self) -> None:
        """After the log's last event: its last readings, then its compactions' spans."""
        if self.last is None:
            return
        self._take(self.last)
        shot = self.index.snapshot(self.folder)
        self.batches.add_spans(
            compaction_spans(shot, home=self.home, book=self.book, ended_since_ms=self.since_ms)
        )

    def _take(self, at: int) -> None:
        if self.since_ms is not None and at < self.since_ms:
            return
        shot = self.index.snapshot(self.folder)
        readings = session_readings(
            shot, context_gauge(shot), home=self.home, book=self.book, at_ms=at
        )
        self.batches.add_readings(readings)


def backfill(
    home: Path,
    *,
    name: str,
    profile: str,
    sender: Sender,
    book: RateBook,
    since_ms: int | None = None,
    step_ms: int = STEP_MS,
) -> Report:
    """Send every session of ``home`` (named ``name`` on the dashboard) as the module
    docstring says, its readings taken once per ``step_ms`` at most; what was sent."""
    check_home(home)
    index = HomeIndex(home, profile=profile)
    report = Report()
    batches = _Batches(sender, name, report)
    for log in sorted(session_logs(home), key=lambda found: str(found.path)):
        reader = _SessionReader(index, log.session_dir, name, book, since_ms, step_ms, batches)
        tracker = SessionTracker(log, before_event=reader.before)
        index.adopt(log.session_dir, tracker)
        tracker.refresh()
        tracker.before_event = None
        reader.done()
        del index.trackers[log.session_dir]
        report.sessions += 1
    batches.flush_readings()
    batches.flush_spans()
    return report
