"""Sending to a collector: the OpenTelemetry SDK's OTLP/HTTP exporters (protobuf) of one
:class:`~dshweb.environment_otlp.OtlpTarget`, and what this process delivered and
dropped, by signal (``/metrics`` shows the counts: :class:`ExportCollector`).

An export waits at most ``OTEL_EXPORTER_OTLP_TIMEOUT`` seconds (10 by default), retries
included (the exporter's own); what it could not deliver is *dropped* and counted, and
the reason kept (:attr:`Sender.last_problem`). The exporters' own log lines are taken
in rather than printed: the caller says an outage once, with that reason.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from dshweb.environment_otlp import OtlpTarget
from dshweb.otlp.figures import CompactionSpan, SessionReadings

Signal = Literal["metrics", "traces"]
SIGNALS: tuple[Signal, ...] = ("metrics", "traces")
EXTRA = "otel"
"""The extra that installs the exporters (``dshweb[otel]``)."""


class Counts:
    """Data points and spans this process delivered and dropped, by signal."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent: dict[Signal, int] = dict.fromkeys(SIGNALS, 0)
        self.dropped: dict[Signal, int] = dict.fromkeys(SIGNALS, 0)

    def add(self, signal: Signal, items: int, *, delivered: bool) -> None:
        with self._lock:
            (self.sent if delivered else self.dropped)[signal] += items


COUNTS = Counts()


class ExportCollector(Collector):
    """``dshweb_otlp_sent_total`` and ``dshweb_otlp_dropped_total``, by signal."""

    def collect(self) -> Iterator[Metric]:
        sent = CounterMetricFamily(
            "dshweb_otlp_sent",
            "Data points and spans the OpenTelemetry export delivered to the collector.",
            labels=["signal"],
        )
        dropped = CounterMetricFamily(
            "dshweb_otlp_dropped",
            "Data points and spans the OpenTelemetry export could not deliver (the "
            "collector out or refusing): their sessions are sent again once it answers.",
            labels=["signal"],
        )
        for signal in SIGNALS:
            sent.add_metric([signal], COUNTS.sent[signal])
            dropped.add_metric([signal], COUNTS.dropped[signal])
        yield sent
        yield dropped


class _LastWords(logging.Handler):
    """Keeps the exporters' first warning of an export (it says why: the ones after it
    only that the retries ran out), for the one line the caller says."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        if not self.last:
            said = record.getMessage()
            reason = said.removeprefix("Transient error ").partition(" encountered while ")[0]
            self.last = reason or said


_words = _LastWords()
_exporter_log = logging.getLogger("opentelemetry.exporter")
_exporter_log.addHandler(_words)
_exporter_log.propagate = False


def exporters_installed() -> bool:
    """Whether the ``otel`` extra is installed (the OTLP/HTTP exporters)."""
    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: F401
    except ImportError:
        return False
    return True


class Sender:
    """The two exporters of ``target``; ``timeout``: seconds an export may take (default
    ``OTEL_EXPORTER_OTLP_TIMEOUT``'s)."""

    def __init__(self, target: OtlpTarget, *, timeout: float | None = None) -> None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        self.target = target
        self._metrics = OTLPMetricExporter(endpoint=target.metrics_url, timeout=timeout)
        self._traces = OTLPSpanExporter(endpoint=target.traces_url, timeout=timeout)
        self.last_problem = ""

    def send_readings(self, home: str, sessions: Sequence[SessionReadings]) -> bool:
        """Send the readings of these sessions of ``home``; whether the collector took them."""
        from opentelemetry.sdk.metrics.export import MetricExportResult

        from dshweb.otlp.encode import metrics_data

        data, points = metrics_data(home, sessions)
        if not points:
            return True
        _words.last = ""
        done = self._metrics.export(data) is MetricExportResult.SUCCESS
        return self._count("metrics", points, done)

    def send_spans(self, home: str, spans: Iterable[CompactionSpan]) -> bool:
        """Send these spans of ``home``'s sessions; whether the collector took them."""
        from opentelemetry.sdk.trace.export import SpanExportResult

        from dshweb.otlp.encode import readable_span

        readable = [readable_span(home, span) for span in spans]
        if not readable:
            return True
        _words.last = ""
        done = self._traces.export(readable) is SpanExportResult.SUCCESS
        return self._count("traces", len(readable), done)

    def probe(self) -> bool:
        """Whether the collector takes an empty metrics request (``dshweb doctor``)."""
        from opentelemetry.sdk.metrics.export import MetricExportResult, MetricsData

        _words.last = ""
        if self._metrics.export(MetricsData([])) is MetricExportResult.SUCCESS:
            return True
        self.last_problem = f"{self.target.metrics_url}: {_words.last or 'no answer'}"
        return False

    def _count(self, signal: Signal, items: int, done: bool) -> bool:
        COUNTS.add(signal, items, delivered=done)
        if not done:
            url = self.target.metrics_url if signal == "metrics" else self.target.traces_url
            self.last_problem = f"{url}: {_words.last or 'no answer'}"
        return done

    def close(self) -> None:
        self._metrics.shutdown()
        self._traces.shutdown()  # type: ignore[no-untyped-call]
