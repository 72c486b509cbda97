"""The ring's arcs and the breakdown's shares, in percent of the window and of the sum.

The used arc of the ring is split over system/tools/messages in proportion to the
context breakdown, like DSH's own panel, and the compaction point is marked where it
sits on the window. Numbers only: the templates draw them (``pathLength="100"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dshweb.core.fold.forecast import Forecast
from dshweb.core.fold.gauge import ContextGauge

NEXT_STEPS = 3
"""Steps ahead the ring's faint arc shows (where the next ones should land)."""


@dataclass(frozen=True, slots=True)
class BreakdownPart:
    """One of system/tools/messages: its tokens and its share of their sum, in percent."""

    kind: str
    tokens: int
    share: float


def breakdown_parts(breakdown: Mapping[str, int]) -> tuple[BreakdownPart, ...]:
    parts = (
        ("system", breakdown.get("systemTokens", 0)),
        ("tools", breakdown.get("toolsTokens", 0)),
        ("messages", breakdown.get("messageTokens", 0)),
    )
    total = sum(tokens for _, tokens in parts)
    return tuple(
        BreakdownPart(kind, tokens, tokens / total * 100 if total > 0 else 0.0)
        for kind, tokens in parts
    )


@dataclass(frozen=True, slots=True)
class RingSegment:
    """One arc of the ring, in percent of the window (start and length, 0..100)."""

    kind: str
    start: float
    length: float


@dataclass(frozen=True, slots=True)
class RingArcs:
    segments: tuple[RingSegment, ...]
    """The used arc split over system/tools/messages in proportion, like DSH's panel."""
    threshold_at: float | None
    """Where the compaction point sits on the ring, in percent of the window."""
    ahead: RingSegment | None = None
    """Where the next :data:`NEXT_STEPS` steps should land at the forecast's pace (up to
    the compaction point, or the window's end): ``None`` without a forecast."""


def ring_arcs(
    gauge: ContextGauge, breakdown: Mapping[str, int], forecast: Forecast | None = None
) -> RingArcs:
    """The arcs of a gauge's ring (none until both the used figure and the window are
    known), with the forecast's next steps when there is one."""
    used, window, threshold = gauge.used, gauge.window, gauge.threshold
    if used is None or not window:
        return RingArcs((), None)
    filled = min(100.0, max(0, used) / window * 100)
    threshold_at = min(100.0, threshold / window * 100) if threshold is not None else None
    ahead = None
    if forecast is not None and forecast.per_step and forecast.steps is not None:
        steps = min(float(NEXT_STEPS), forecast.steps)
        end = min(100.0, (max(0, used) + steps * forecast.per_step) / window * 100)
        if threshold_at is not None and filled < threshold_at:
            end = min(end, threshold_at)
        if end > filled:
            ahead = RingSegment("ahead", filled, end - filled)
    return RingArcs(_split(filled, breakdown), threshold_at, ahead)


def _split(filled: float, breakdown: Mapping[str, int]) -> tuple[RingSegment, ...]:
    parts = breakdown_parts(breakdown)
    if not any(part.tokens > 0 for part in parts):
        return (RingSegment("used", 0.0, filled),) if filled > 0 else ()
    segments: list[RingSegment] = []
    start = 0.0
    for part in parts:
        length = filled * part.share / 100
        if length > 0:
            segments.append(RingSegment(part.kind, start, length))
        start += length
    return tuple(segments)
