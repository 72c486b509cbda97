"""The occupancy line's figures, computed as the plugin's JavaScript computes them.

``Math.round`` rounds halves up (:func:`~dshweb.core.fold.gauge.round_half_up`, dshweb's
one half-up rule) and ratios are float divisions in the source's order; the figures are
written as the plugin writes them by :func:`dshweb.core.fold.line_tokens.format_line_tokens`
(its ``formatTokens``). The used, free and headroom figures are floored
to display steps (:func:`display_step`, :func:`headroom_step`) so the line changes only when
a step is crossed. :class:`Figures` carries every number one line is rendered from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dshweb.core.fold.gauge import round_half_up
from dshweb.core.fold.pace import PaceEstimate
from dshweb.core.settings.occupancy.line_settings import LineSettings, Wording


def percent_of(value: float, total: float) -> int | None:
    if total <= 0:
        return None
    return round_half_up(value / total * 100)


def display_step(window: int, quantum_percent: float) -> int:
    if quantum_percent > 0 and window > 0:
        return max(1000, round_half_up(quantum_percent / 100 * window))
    return 1


def headroom_step(headroom: int, window: int, settings: LineSettings) -> int:
    """The step the headroom is floored to: coarse far from the point, finer near it."""
    coarse = display_step(window, settings.quantum_percent)
    tiers: tuple[int, ...]
    if settings.wording is Wording.SOURCE_0_1_3:
        tiers = (
            coarse,
            max(1000, round_half_up(coarse * 0.4)),
            max(1000, round_half_up(coarse * 0.1)),
            2000,
        )
    else:
        # The README: "the floor is now … 10K on a 1M window"; that figure (not the
        # "10%" it also states) is what the live quotes and the 11-commit walk show.
        tiers = (
            coarse,
            max(1000, round_half_up(coarse * 0.4)),
            max(1000, round_half_up(coarse * 0.2)),
        )
    for tier in tiers:
        if headroom >= 4 * tier:
            return tier
    return tiers[-1]


def floor_to(value: int, step: int) -> int:
    return math.floor(value / step) * step


@dataclass(frozen=True, slots=True)
class Figures:
    """Every number behind one line with a reading, as computed and as shown."""

    used: int
    used_shown: int
    step: int
    window: int
    percent: int | None
    threshold: int | None
    headroom: int | None
    headroom_shown: int | None
    headroom_step: int | None
    free: int
    free_shown: int
    pace: PaceEstimate | None
