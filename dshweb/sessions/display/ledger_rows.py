"""The ledger and its timeline as rows of plain values: what the downloads hold.

Every point of the ledger's series (:attr:`Ledger.points`, the very series the chart is
drawn from before :func:`~.timeline.downsample`) is one timeline row, and every fold one
ledger row with the figures the ledger table shows. Values are ``int``, ``str``
or ``None`` (a figure the log does not give), so a row is ready for CSV or JSON; texts
from the log have lone surrogates replaced (U+FFFD), so they encode as UTF-8. Rows are
yielded one at a time: a caller can stream them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from dshweb.core.fold.compactions import CompactCommand, Compaction, TimelinePoint
from dshweb.core.fold.cost import RateBook
from dshweb.core.log.jsjson import printable
from dshweb.core.log.times import iso_utc

Value = int | float | str | None

TIMELINE_COLUMNS = ("seq", "time", "time_ms", "tokens", "role", "fold")
"""``time`` is ISO 8601 UTC (``Z``), ``time_ms`` DSH's epoch milliseconds; ``fold`` is the
fold's number (1-based, as the ledger lists it) for a ``before``/``after`` point."""

COMPACTION_COLUMNS = (
    "number",
    "kind",
    "status",
    "turn",
    "seq",
    "end_seq",
    "time",
    "time_ms",
    "shadowed_tokens",
    "shadowed_nodes",
    "checkpoint_tokens",
    "before",
    "after",
    "bought",
    "prunes",
    "summary_model",
    "summary_input",
    "summary_cache_read",
    "summary_cache_write",
    "summary_output",
    "rewritten_tokens",
    "requests_after",
    "cost_usd",
    "summary_usd",
    "rewrite_usd",
    "not_resent_usd",
    "command",
    "command_seq",
    "command_kind",
    "command_text",
    "error",
)
"""``before``/``after`` are the projected tokens just before and right after the fold,
``bought`` their difference, as the ledger table shows them. The ``*_usd`` columns are its
cost (:mod:`dshweb.core.fold.cost`): ``summary_usd`` the summariser's request,
``rewrite_usd`` the next request sending ``rewritten_tokens`` of prefix again,
``cost_usd`` both, ``not_resent_usd`` what the ``requests_after`` it, until the next
fold, saved by not sending what it took out; empty for a model without a price."""

REFUSED_COLUMNS = ("seq", "time", "time_ms", "command", "kind", "text", "done_seq")


def _text(value: str | None) -> str | None:
    return None if value is None else printable(value)


def timeline_row(point: TimelinePoint) -> tuple[Value, ...]:
    return (point.seq, iso_utc(point.time), point.time, point.tokens, point.role, point.compaction)


def compaction_row(number: int, compaction: Compaction, book: RateBook) -> tuple[Value, ...]:
    usage = compaction.summary_usage
    costed = compaction.costed(book)
    known = not costed.unrated
    return (
        number,
        compaction.kind,
        compaction.status,
        compaction.turn,
        compaction.seq,
        compaction.end_seq,
        iso_utc(compaction.time),
        compaction.time,
        compaction.shadowed_tokens,
        compaction.shadowed_nodes,
        compaction.checkpoint_tokens,
        compaction.before,
        compaction.after,
        compaction.dropped,
        compaction.prunes,
        _text(compaction.summary_model),
        usage.input if usage else None,
        usage.cache_read if usage else None,
        usage.cache_write if usage else None,
        usage.output if usage else None,
        compaction.cost.rewritten if compaction.cost.rewrite is not None else None,
        costed.requests_after,
        costed.cost if known else None,
        costed.summary if known else None,
        costed.rewrite if known else None,
        costed.not_resent if known else None,
        _text(compaction.command),
        compaction.command_seq,
        _text(compaction.command_kind),
        _text(compaction.command_text),
        _text(compaction.error),
    )


def refused_row(command: CompactCommand) -> tuple[Value, ...]:
    return (
        command.seq,
        iso_utc(command.time),
        command.time,
        _text(command.command),
        _text(command.kind),
        _text(command.text),
        command.done_seq,
    )


def timeline_rows(points: Iterable[TimelinePoint]) -> Iterator[tuple[Value, ...]]:
    """One row per point, in seq order (:data:`TIMELINE_COLUMNS`)."""
    return (timeline_row(point) for point in points)


def compaction_rows(
    compactions: Iterable[Compaction], book: RateBook, *, first: int = 1
) -> Iterator[tuple[Value, ...]]:
    """One row per fold, oldest first, numbered from ``first`` (:data:`COMPACTION_COLUMNS`),
    priced by ``book``."""
    return (
        compaction_row(number, compaction, book)
        for number, compaction in enumerate(compactions, start=first)
    )
