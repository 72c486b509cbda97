"""The occupancy line's figures, computed as the plugin's JavaScript computes them.

``Math.round`` rounds halves up (:func:`~dshweb.core.fold.gauge.round_half_up`, dshweb's
one half-up rule), ``toFixed(2)`` rounds the exact binary value half up (:func:`format_line_tokens`:
a decimal quantize, since scaling by 100 first would round the value twice), and ratios
are float divisions in the source's order. The used, free and headroom figures are floored
to display steps (:func:`display_step`, :func:`headroom_step`) so the line changes only when
a step is crossed. :class:`Figures` carries every number one line is rendered from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from dshweb.core.fold.gauge import round_half_up
from dshweb.core.fold.pace import PaceEstimate
from dshweb.core.settings.occupancy.line_settings import LineSettings, Wording


def format_line_tokens(value: float) -> str:
    """A token figure as dsh-context-truth writes it into the line the model reads:
    ``172437`` → ``172K``, ``1000000`` → ``1.00M``.

    Not the pages' figure (:func:`dshweb.sessions.display.figures.format_page_tokens`,
    ``1.0M``, ``1.2K``): this one must be the plugin's text byte for byte (its ``K`` has no
    decimal, its ``M`` two, ``999500`` is ``1000K``), so it keeps the plugin's rules.
    """
    if not math.isfinite(value) or value < 0:
        return "?"
    if value >= 1e6:
        return f"{Decimal(value / 1e6).quantize(Decimal('0.01'), ROUND_HALF_UP)}M"
    if value >= 1e3:
        return f"{round_half_up(value / 1e3)}K"
    return str(round_half_up(value))


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
