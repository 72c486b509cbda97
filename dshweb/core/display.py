"""How a session's numbers are shown: token figures, the ring's percent, the band.

Pure functions, no Django. The token figures and the percent follow DSH's own Web UI
ring (DSH_FACTS §6): ``used = projectedTokens ?? pressureTokens`` and
``percent = min(100, round_half_up(used / contextWindow × 100))``. Rounding is always
half-up (``floor(x + 0.5)``, like JavaScript's ``Math.round``), never Python's
round-half-to-even. The bands are keyed to the compaction point like
dsh-context-truth: ``ratio = used / threshold``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.profile.effective import DEFAULT_RULE, BandRule

CRITICAL_AT = 1.0


class Band(StrEnum):
    AMPLE = "ample"
    MODERATE = "moderate"
    TIGHT = "tight"
    CRITICAL = "critical"
    UNKNOWN = "unknown"


def round_half_up(value: float) -> int:
    return math.floor(value + 0.5)


def format_tokens(count: int) -> str:
    """``999``, ``1.2K``, ``678K``, ``1.0M``: the ring's compact token figure.

    Below 10K one decimal of K, below 1M whole K, above that one decimal of M. A value
    that rounds up to the next unit's size is shown in that unit (``9_999`` is ``10K``,
    ``999_999`` is ``1.0M``), so no figure reads ``10.0K`` or ``1000K``.
    """
    if count < 0:
        return "-" + format_tokens(-count)
    if count < 1000:
        return str(count)
    # Integer half-up rounding: exact, no float drift at the .5 boundaries.
    tenths_k = (count + 50) // 100
    if tenths_k < 100:
        return f"{tenths_k // 10}.{tenths_k % 10}K"
    whole_k = (count + 500) // 1000
    if whole_k < 1000:
        return f"{whole_k}K"
    tenths_m = (count + 50_000) // 100_000
    return f"{tenths_m // 10}.{tenths_m % 10}M"


def context_percent(used: int | None, window: int | None) -> int | None:
    """The ring's percent, or ``None`` unless both figures are known (as DSH shows it)."""
    if used is None or not window or window <= 0:
        return None
    # Float arithmetic on purpose: the same expression DSH's ring evaluates.
    return min(100, round_half_up(max(0, used) / window * 100))


def context_band(
    used: int | None,
    threshold: int | None,
    previous: Band | None = None,
    rule: BandRule = DEFAULT_RULE,
) -> Band:
    """``ample < moderateAt ≤ moderate < tightAt ≤ tight < 1.0 ≤ critical`` of the
    compaction point.

    Like dsh-context-truth, a band is entered as soon as its edge is reached but left
    downward only once the ratio falls ``hysteresis`` below its edge (at or under
    ``floor − hysteresis``), so a reading that hovers on an edge does not flip the band.
    """
    if used is None or threshold is None or threshold <= 0:
        return Band.UNKNOWN
    ratio = used / threshold
    if ratio >= CRITICAL_AT:
        band = Band.CRITICAL
    elif ratio >= rule.tight_at:
        band = Band.TIGHT
    elif ratio >= rule.moderate_at:
        band = Band.MODERATE
    else:
        band = Band.AMPLE
    if previous is None or _RANK[band] >= _RANK[previous]:
        return band
    return band if ratio <= _floor(rule, previous) - rule.hysteresis else previous


_RANK = {Band.UNKNOWN: -1, Band.AMPLE: 0, Band.MODERATE: 1, Band.TIGHT: 2, Band.CRITICAL: 3}


def _floor(rule: BandRule, band: Band) -> float:
    """Where ``band`` starts, as a fraction of the compaction point."""
    return {
        Band.MODERATE: rule.moderate_at,
        Band.TIGHT: rule.tight_at,
        Band.CRITICAL: CRITICAL_AT,
    }.get(band, 0.0)


def cache_hit_ratio(token_usage: Mapping[str, int]) -> float | None:
    """``cacheRead / (uncachedInput + cacheRead + cacheWrite)``; ``None`` before any input."""
    read = token_usage.get("cacheReadTokens", 0)
    total = (
        token_usage.get("uncachedInputTokens", 0) + read + token_usage.get("cacheWriteTokens", 0)
    )
    return read / total if total > 0 else None


def format_ratio(ratio: float | None) -> str:
    """``0.8734`` → ``87.3%`` (half-up to one decimal); ``—`` when unknown."""
    if ratio is None:
        return "—"
    tenths = round_half_up(ratio * 1000)
    return f"{tenths // 10}.{tenths % 10}%"


def dom_id(prefix: str, key: str) -> str:
    """A stable, unique HTML id for ``key``: ``[A-Za-z0-9-]`` kept, the rest ``_hex_``."""
    escaped = "".join(
        ch if (ch.isascii() and ch.isalnum()) or ch == "-" else f"_{ord(ch):x}_" for ch in key
    )
    return f"{prefix}-{escaped}"


@dataclass(frozen=True, slots=True)
class RingSegment:
    """One arc of the ring, in percent of the window (start and length, 0..100)."""

    kind: str
    start: float
    length: float


@dataclass(frozen=True, slots=True)
class ContextReading:
    """What the ring and the list show for one session."""

    used: int | None
    window: int | None
    percent: int | None
    threshold: int | None
    headroom: int | None
    """``threshold − used``; negative past the compaction point."""
    band: Band
    segments: tuple[RingSegment, ...]
    """The used arc split over system/tools/messages in proportion, like DSH's panel."""
    threshold_at: float | None
    """Where the compaction point sits on the ring, in percent of the window."""


def context_reading(
    snapshot: SessionSnapshot, previous: Band | None = None, rule: BandRule = DEFAULT_RULE
) -> ContextReading:
    """The ring and list figures for a snapshot; ``previous`` is the band shown before."""
    used = snapshot.used_tokens
    window = snapshot.context_pressure.get("contextWindow")
    threshold = snapshot.point.threshold_tokens if snapshot.point is not None else None
    percent = context_percent(used, window)
    segments: tuple[RingSegment, ...] = ()
    threshold_at: float | None = None
    if used is not None and window:
        filled = min(100.0, max(0, used) / window * 100)
        segments = _split(filled, snapshot.context_breakdown)
        if threshold is not None:
            threshold_at = min(100.0, threshold / window * 100)
    return ContextReading(
        used=used,
        window=window,
        percent=percent,
        threshold=threshold,
        headroom=threshold - used if threshold is not None and used is not None else None,
        band=context_band(used, threshold, previous, rule),
        segments=segments,
        threshold_at=threshold_at,
    )


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
