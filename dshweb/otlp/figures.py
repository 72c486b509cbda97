"""What the OpenTelemetry export says of one session, as plain values: its readings (a
metric's data point each, :mod:`dshweb.otlp.names`) and its compactions' spans. Made from
a snapshot the hub published (or the backfill took), never by folding; nothing here
imports OpenTelemetry (:mod:`dshweb.otlp.encode` turns these into its data).

Sent twice, the same figures are the same data: the cumulative series count from the
session's start (its header's ``createdAt``), whenever they are read, and a span's ids
are digests of the home's name, the session's id and the compaction's first event. A
compaction's span is sent once it is *settled*, when nothing it carries can change: a
summary once it ended (well or not), a prune pass once something else followed it (the
request after it, or another compaction; until then another prune may join it). What a
compaction brings about later (the prefix the next request sends again, what the
requests after it do not send) is theirs: the ledger and the API show it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.gauge import ContextGauge
from dshweb.core.fold.request_sizes import Sizes
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.log.jsjson import printable
from dshweb.otlp import names

AttributeValue = str | int | float | bool
Attributes = tuple[tuple[str, AttributeValue], ...]


def _attributes(pairs: Iterable[tuple[str, AttributeValue | None]]) -> Attributes:
    """Attributes ready to encode: none left out but those without a value, and every text
    from the log valid UTF-8 (:func:`~dshweb.core.log.jsjson.printable`: the encoder leaves
    out an attribute it cannot write, a model's name with a lone surrogate, and the series
    would lose it)."""
    return tuple(
        (key, printable(value) if isinstance(value, str) else value)
        for key, value in pairs
        if value is not None
    )


@dataclass(frozen=True, slots=True)
class Reading:
    """One data point: a metric's value for one set of attributes (a histogram's is its
    :class:`~dshweb.core.fold.request_sizes.Sizes`)."""

    metric: str
    attributes: Attributes
    value: int | float | Sizes


@dataclass(frozen=True, slots=True)
class SessionReadings:
    start_ms: int
    """The session's start: every cumulative series of it counts from there."""
    at_ms: int
    """When the readings hold (the data points' time)."""
    readings: tuple[Reading, ...]


@dataclass(frozen=True, slots=True)
class CompactionSpan:
    trace_id: int
    span_id: int
    seq: int
    """The compaction's first event (what its span id is a digest of)."""
    name: str
    start_ms: int
    end_ms: int
    attributes: Attributes
    error: str | None


def session_start(snapshot: SessionSnapshot, at_ms: int) -> int:
    """When the session's cumulative series start: its header's ``createdAt``, else its
    first event (never after ``at_ms``)."""
    start = snapshot.created_at if snapshot.created_at is not None else snapshot.first_time
    return min(at_ms, start if start is not None else at_ms)


def session_readings(
    snapshot: SessionSnapshot, gauge: ContextGauge, *, home: str, book: RateBook, at_ms: int
) -> SessionReadings:
    """Every reading of ``snapshot`` as of ``at_ms`` (epoch ms; the forecast's clock too)."""
    session = _attributes(((names.HOME, home), (names.CONVERSATION, snapshot.session_id)))
    return SessionReadings(
        session_start(snapshot, at_ms),
        at_ms,
        (
            *_requests(snapshot, session),
            *_costs(snapshot, session, book),
            *_context(snapshot, gauge, session, at_ms),
            *_compactions(snapshot, session),
        ),
    )


def _requests(snapshot: SessionSnapshot, session: Attributes) -> Iterator[Reading]:
    for sizes in snapshot.requests:
        model, provider = sizes.route
        route = _attributes(
            (
                (names.OPERATION, names.CHAT),
                (names.PROVIDER, names.provider_name(provider)),
                (names.MODEL, model),
                *session,
            )
        )
        yield Reading(names.TOKEN_USAGE, (*route, (names.TOKEN_TYPE, "input")), sizes.input)
        yield Reading(names.TOKEN_USAGE, (*route, (names.TOKEN_TYPE, "output")), sizes.output)
        yield Reading(names.CACHE_READ, route, sizes.cache_read)
        yield Reading(names.CACHE_CREATION, route, sizes.cache_write)


def _costs(snapshot: SessionSnapshot, session: Attributes, book: RateBook) -> Iterator[Reading]:
    for row in book.by_route(snapshot.cost):
        dollars = row.dollars
        if dollars is None:
            continue  # a model without rates: unknown, never $0
        model, provider = row.rates.route
        route = ((names.PROVIDER, names.provider_name(provider)), (names.MODEL, model))
        yield Reading(names.COST, _attributes((*route, *session)), dollars)


def _context(
    snapshot: SessionSnapshot, gauge: ContextGauge, session: Attributes, at_ms: int
) -> Iterator[Reading]:
    for metric, value in (
        (names.USED, gauge.used),
        (names.WINDOW, gauge.window),
        (names.POINT, gauge.threshold),
    ):
        if value is not None:
            yield Reading(metric, session, value)
    for next_, forecast in (
        ("pass", snapshot.forecast(at_ms)),
        ("summary", snapshot.summary_forecast(at_ms)),
    ):
        if forecast.steps is not None:
            yield Reading(names.FORECAST, (*session, (names.NEXT, next_)), forecast.steps)


def _compactions(snapshot: SessionSnapshot, session: Attributes) -> Iterator[Reading]:
    ledger = snapshot.ledger
    tally = ledger.tally()
    for kind, count in tally.done:
        yield Reading(names.COMPACTIONS, (*session, (names.KIND, kind)), count)
    for kind, tokens in tally.shadowed:
        yield Reading(names.SHADOWED, (*session, (names.KIND, kind)), tokens)
    yield Reading(names.FAILED, session, tally.failed)
    yield Reading(names.FREED, session, tally.freed)
    yield Reading(names.PRUNES, session, tally.prunes)


# -- spans -----------------------------------------------------------------------------------


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(("dshweb", *parts)).encode("utf-8", "surrogatepass")).digest()


def trace_id(home: str, session_id: str) -> int:
    """The session's trace: one per (home, session), whoever sends it and how often."""
    return int.from_bytes(_digest("trace", home, session_id)[:16], "big") or 1


def span_id(home: str, session_id: str, seq: int) -> int:
    return int.from_bytes(_digest("compaction", home, session_id, str(seq))[:8], "big") or 1


def settled(compactions: tuple[Compaction, ...]) -> list[int]:
    """The indexes of the compactions whose span can be sent (see the module docstring)."""
    last = len(compactions) - 1
    return [
        index
        for index, compaction in enumerate(compactions)
        if (compaction.status != "open" and compaction.kind != "prune")
        or (compaction.kind == "prune" and (compaction.cost.rewrite is not None or index < last))
    ]


def compaction_spans(
    snapshot: SessionSnapshot, *, home: str, book: RateBook, ended_since_ms: int | None = None
) -> list[CompactionSpan]:
    """A span per settled compaction the ledger keeps (one that ended at or after
    ``ended_since_ms``, when given), oldest first."""
    ledger = snapshot.ledger
    session_id = snapshot.session_id
    trace = trace_id(home, session_id)
    spans = []
    for index in settled(ledger.compactions):
        compaction = ledger.compactions[index]
        start = compaction.time
        end = compaction.end_time if compaction.end_time is not None else start
        if start is None or end is None or (ended_since_ms is not None and end < ended_since_ms):
            continue
        spans.append(
            CompactionSpan(
                trace_id=trace,
                span_id=span_id(home, session_id, compaction.seq),
                seq=compaction.seq,
                name=f"{names.SPAN} {compaction.kind}",
                start_ms=start,
                end_ms=max(start, end),
                attributes=_span_attributes(
                    compaction, ledger.first + index, home, session_id, book
                ),
                error=None if compaction.error is None else printable(compaction.error),
            )
        )
    return spans


def _span_attributes(
    compaction: Compaction, number: int, home: str, session_id: str, book: RateBook
) -> Attributes:
    found: list[tuple[str, AttributeValue | None]] = [
        (names.CONVERSATION, session_id),
        (names.HOME, home),
        (names.KIND, compaction.kind),
        ("dshweb.compaction.number", number),
        ("dshweb.compaction.id", compaction.compaction_id),
        ("dshweb.compaction.command", compaction.command),
        ("dshweb.compaction.shadowed_tokens", compaction.shadowed_tokens),
        ("dshweb.compaction.shadowed_messages", compaction.shadowed_nodes),
        ("dshweb.compaction.checkpoint_tokens", compaction.checkpoint_tokens),
        ("dshweb.context.before", compaction.before),
        ("dshweb.context.after", compaction.after),
        ("dshweb.compaction.freed", compaction.dropped),
    ]
    if compaction.kind == "prune":
        found.append(("dshweb.compaction.prunes", compaction.prunes))
    costed = compaction.costed(book)
    if not costed.unrated:
        found.append(("dshweb.compaction.cost_usd", costed.summary))
    usage = compaction.summary_usage
    if usage is not None:
        found += [
            (names.USAGE_INPUT, usage.prompt),
            (names.USAGE_OUTPUT, usage.output),
            (names.CACHE_READ, usage.cache_read),
            (names.CACHE_CREATION, usage.cache_write),
        ]
    if compaction.cost.summary is not None:
        model, provider = compaction.cost.summary[0], compaction.cost.summary[1]
        found += [(names.PROVIDER, names.provider_name(provider)), (names.MODEL, model)]
    return _attributes(found)
