"""How full a session's context is: the ring's figures and the band, as the hub folds them.

The figures follow DSH's own Web UI ring (DSH_FACTS §6):
``used = projectedTokens ?? pressureTokens`` and
``percent = min(100, round_half_up(used / contextWindow × 100))``. Rounding is always
half-up like JavaScript's ``Math.round`` (:func:`round_half_up`, the one rounding rule of
dshweb: the ring, the pages' ratios and the occupancy line all call it), never Python's
round-half-to-even. The bands are keyed to the compaction point like
dsh-context-truth: ``ratio = used / threshold``, held with its hysteresis against the
band shown before (the caller keeps that: a gauge is a value, taking one changes
nothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from dshweb.core.profile.effective import DEFAULT_RULE, BandRule

if TYPE_CHECKING:  # the snapshot is made with this module's bands
    from dshweb.core.fold.session import SessionSnapshot

CRITICAL_AT = 1.0


class Band(StrEnum):
    AMPLE = "ample"
    MODERATE = "moderate"
    TIGHT = "tight"
    CRITICAL = "critical"
    UNKNOWN = "unknown"


def round_half_up(value: float) -> int:
    """``Math.round``: the nearest integer, halves toward +∞.

    Not ``floor(value + 0.5)``: that sum is itself rounded, so ``0.49999999999999994``
    would give 1 and an odd integer past 2⁵³ its even neighbour; JavaScript gives 0 and
    the integer.
    """
    floor = math.floor(value)
    return floor + 1 if value - floor >= 0.5 else floor


def context_percent(used: int | None, window: int | None) -> int | None:
    """The ring's percent, or ``None`` unless both figures are known (as DSH shows it)."""
    if used is None or not window or window <= 0:
        return None
    # Float arithmetic on purpose: the same expression DSH's ring evaluates.
    return min(100, round_half_up(max(0, used) / window * 100))


def window_share(part: float | None, window: float | None) -> float | None:
    """``part`` as a percent of ``window``, kept within 0–100: where a mark sits on a ring
    (not rounded, unlike :func:`context_percent`)."""
    if part is None or not window:
        return None
    return min(100.0, max(0.0, float(part) / float(window) * 100))


def context_band(
    used: int | None,
    threshold: int | None,
    previous: Band | None = None,
    rule: BandRule = DEFAULT_RULE,
) -> Band:
    """The band of ``used`` against the compaction point (:func:`settle_band`), or
    ``UNKNOWN`` without both figures."""
    if used is None or threshold is None or threshold <= 0:
        return Band.UNKNOWN
    return settle_band(used / threshold, previous, rule)


def settle_band(ratio: float, previous: Band | None, rule: BandRule = DEFAULT_RULE) -> Band:
    """``ample < moderateAt ≤ moderate < tightAt ≤ tight < 1.0 ≤ critical`` of the
    compaction point, held against ``previous`` with hysteresis.

    The one band rule of dshweb: the ring and the sessions list (:func:`context_band`) and
    the occupancy line (:mod:`dshweb.core.settings.occupancy.line`) all settle with it.
    Like dsh-context-truth, a band is entered as soon as its edge is reached but left
    downward only once the ratio falls ``hysteresis`` below its edge (at or under
    ``floor − hysteresis``), so a reading that hovers on an edge does not flip the band.
    """
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


@dataclass(frozen=True, slots=True)
class ContextGauge:
    """How full one session's context is: what the ring and the sessions list show."""

    used: int | None
    window: int | None
    percent: int | None
    threshold: int | None
    headroom: int | None
    """``threshold − used``; negative past the compaction point."""
    band: Band

    def as_json(self) -> dict[str, int | str | None]:
        """The gauge's fields as the API, ``dsh_snapshot --json`` and the exports name them."""
        return {
            "band": self.band.value,
            "usedTokens": self.used,
            "windowTokens": self.window,
            "percent": self.percent,
            "thresholdTokens": self.threshold,
            "headroomTokens": self.headroom,
        }


def context_gauge(
    snapshot: SessionSnapshot, previous: Band | None = None, rule: BandRule | None = None
) -> ContextGauge:
    """The gauge of a snapshot: its band held against the band at its last step boundary
    (``previous``, by default the snapshot's own ``step_band``: the same for every reader
    of the same log), by its profile's band edges (``rule``, by default the snapshot's)."""
    previous = snapshot.step_band if previous is None else previous
    rule = snapshot.rule if rule is None else rule
    used = snapshot.used_tokens
    window = snapshot.context_pressure.get("contextWindow")
    threshold = snapshot.threshold
    return ContextGauge(
        used=used,
        window=window,
        percent=context_percent(used, window),
        threshold=threshold,
        headroom=threshold - used if threshold is not None and used is not None else None,
        band=context_band(used, threshold, previous, rule),
    )
