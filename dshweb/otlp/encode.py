"""The export's figures (:mod:`dshweb.otlp.figures`) as the OpenTelemetry SDK's own data:
``MetricsData`` of cumulative sums, cumulative histograms and gauges, and ``ReadableSpan``
values, which its OTLP exporters encode and send.

The data points are made here rather than by the SDK's instruments: a reader stamps each
point with the clock of the process that reads it, and a cumulative series with the time
that process started, so a session's history could not be sent again as the same data.
Here each point carries the time its figures hold and the session's start.

The resource is ``service.name=dshweb`` and ``service.instance.id=<the home's name>``, the
same whichever process sends (the SDK's own default instance id is random per process,
which would make each run's series new ones); ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES`` add to it or override it, as the standard says. The
instrumentation scope is ``dshweb``, with no version, so a series stays the same one from
a release to the next.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from dshweb.core.fold.request_sizes import TOKEN_BOUNDS, Sizes
from dshweb.otlp import names
from dshweb.otlp.figures import CompactionSpan, SessionReadings

SCOPE = InstrumentationScope("dshweb")
_MS = 1_000_000
_BOUNDS = tuple(float(bound) for bound in TOKEN_BOUNDS)


@functools.cache
def resource(home: str) -> Resource:
    own = {"service.name": "dshweb", "service.instance.id": home}
    return Resource.create(own).merge(OTELResourceDetector().detect())


def _point(readings: SessionReadings, attributes: dict[str, object], value: object) -> object:
    start, time = readings.start_ms * _MS, readings.at_ms * _MS
    if isinstance(value, Sizes):
        return HistogramDataPoint(
            attributes=attributes,  # type: ignore[arg-type]
            start_time_unix_nano=start,
            time_unix_nano=time,
            count=value.count,
            sum=value.total,
            bucket_counts=value.buckets,
            explicit_bounds=_BOUNDS,
            # A sample that replaced another leaves no true minimum or maximum: none is sent.
            min=None,  # type: ignore[arg-type]
            max=None,  # type: ignore[arg-type]
        )
    return NumberDataPoint(
        attributes=attributes,  # type: ignore[arg-type]
        start_time_unix_nano=start,
        time_unix_nano=time,
        value=value,  # type: ignore[arg-type]
    )


def metrics_data(home: str, sessions: Iterable[SessionReadings]) -> tuple[MetricsData, int]:
    """The readings of ``home``'s sessions as one ``MetricsData``, and how many data points
    it holds."""
    points: dict[str, list[object]] = {}
    for readings in sessions:
        for reading in readings.readings:
            point = _point(readings, dict(reading.attributes), reading.value)
            points.setdefault(reading.metric, []).append(point)
    metrics = []
    cumulative = AggregationTemporality.CUMULATIVE
    for name, found in points.items():
        info = names.METRICS[name]
        data: Gauge | Sum | Histogram
        if info.kind == "histogram":
            data = Histogram(found, cumulative)  # type: ignore[arg-type]
        elif info.kind == "sum":
            data = Sum(found, cumulative, is_monotonic=True)  # type: ignore[arg-type]
        else:
            data = Gauge(found)  # type: ignore[arg-type]
        metrics.append(Metric(name, info.description, info.unit, data))
    scope = ScopeMetrics(SCOPE, metrics, "")
    data_ = MetricsData([ResourceMetrics(resource(home), [scope], "")])
    return data_, sum(len(found) for found in points.values())


def readable_span(home: str, span: CompactionSpan) -> ReadableSpan:
    # A compaction that ended well leaves the status unset, as instrumentations do.
    status = (
        Status(StatusCode.UNSET) if span.error is None else Status(StatusCode.ERROR, span.error)
    )
    return ReadableSpan(
        name=span.name,
        context=SpanContext(
            span.trace_id, span.span_id, is_remote=False, trace_flags=TraceFlags(1)
        ),
        resource=resource(home),
        attributes=dict(span.attributes),
        kind=SpanKind.INTERNAL,
        status=status,
        start_time=span.start_ms * _MS,
        end_time=span.end_ms * _MS,
        instrumentation_scope=SCOPE,
    )
