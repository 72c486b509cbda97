"""An OTLP/HTTP receiver on 127.0.0.1, for the export's tests: it takes what an exporter
posts to ``/v1/metrics`` and ``/v1/traces`` (protobuf, gzip or not), decodes it with
``opentelemetry-proto``, and keeps every data point and span it was sent, flattened to
plain values. It answers as a collector does (200 and an empty response message), or, told
to refuse, 400.

No collector binary stands in: none is installable from the registries this project
reaches (docs/opentelemetry.md gives the config for those who run one).
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

HOST = "127.0.0.1"

Attributes = tuple[tuple[str, Any], ...]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


def attributes(pairs: Any) -> Attributes:
    found: list[KeyValue] = list(pairs)
    return tuple(sorted((pair.key, _value(pair.value)) for pair in found))


@dataclass(frozen=True, slots=True)
class Point:
    """One data point as it arrived: its metric, kind, unit, resource and attributes,
    start and time (ns), and its value (a histogram's: ``(count, sum, buckets, bounds)``)."""

    metric: str
    kind: str
    unit: str
    resource: Attributes
    scope: str
    attributes: Attributes
    start: int
    time: int
    value: Any
    monotonic: bool | None = None
    temporality: int | None = None

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self.attributes)

    @property
    def series(self) -> tuple[Any, ...]:
        """What makes it the same series to a backend: names, resource and attributes."""
        return (self.metric, self.resource, self.scope, self.attributes, self.start)


@dataclass(frozen=True, slots=True)
class Span:
    trace_id: bytes
    span_id: bytes
    parent: bytes
    name: str
    kind: int
    start: int
    end: int
    resource: Attributes
    attributes: Attributes
    status: tuple[int, str]

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self.attributes)


@dataclass
class Received:
    points: list[Point] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=lambda: {"metrics": 0, "traces": 0})
    """Requests taken, by signal (a count read without the lock is never torn)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    refuse: bool = False
    """Answer 400 to every request (a collector that refuses what it is sent)."""

    def wait_for(
        self, what: Callable[[Received], bool], timeout: float = 30.0, why: str = ""
    ) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if what(self):  # it reads through snapshot() (the lock is not reentrant)
                return
            assert time.monotonic() < deadline, f"not received in {timeout:.0f} s: {why}"
            time.sleep(0.05)

    def snapshot(self) -> tuple[list[Point], list[Span]]:
        with self.lock:
            return list(self.points), list(self.spans)


def _points(request: ExportMetricsServiceRequest) -> Iterator[Point]:
    for resource_metrics in request.resource_metrics:
        resource = attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            scope = scope_metrics.scope.name
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                data = getattr(metric, kind)
                for point in data.data_points:
                    if kind == "histogram":
                        value: Any = (
                            point.count,
                            point.sum,
                            tuple(point.bucket_counts),
                            tuple(point.explicit_bounds),
                        )
                    else:
                        value = getattr(point, point.WhichOneof("value"))
                    yield Point(
                        metric.name,
                        kind,
                        metric.unit,
                        resource,
                        scope,
                        attributes(point.attributes),
                        point.start_time_unix_nano,
                        point.time_unix_nano,
                        value,
                        data.is_monotonic if kind == "sum" else None,
                        data.aggregation_temporality if kind in ("sum", "histogram") else None,
                    )


def _spans(request: ExportTraceServiceRequest) -> Iterator[Span]:
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield Span(
                    span.trace_id,
                    span.span_id,
                    span.parent_span_id,
                    span.name,
                    span.kind,
                    span.start_time_unix_nano,
                    span.end_time_unix_nano,
                    resource,
                    attributes(span.attributes),
                    (span.status.code, span.status.message),
                )


def _handler(received: Received) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            encoding = self.headers.get("Content-Encoding", "")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            signal = self.path.rstrip("/").rsplit("/", 1)[-1]
            if received.refuse or signal not in received.requests:
                self._answer(400, b"")
                return
            if signal == "metrics":
                metrics = ExportMetricsServiceRequest.FromString(body)
                with received.lock:
                    received.points.extend(_points(metrics))
                    received.requests[signal] += 1
                answer = ExportMetricsServiceResponse().SerializeToString()
            else:
                traces = ExportTraceServiceRequest.FromString(body)
                with received.lock:
                    received.spans.extend(_spans(traces))
                    received.requests[signal] += 1
                answer = ExportTraceServiceResponse().SerializeToString()
            self._answer(200, answer)

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def receiving(port: int = 0) -> Iterator[tuple[str, Received]]:
    """A receiver on ``port`` (default: a free one) of 127.0.0.1: its base URL (what
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes) and what it received."""
    received = Received()
    server = ThreadingHTTPServer((HOST, port), _handler(received))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
