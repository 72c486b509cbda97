"""The line dsh-context-truth injects for a reading, rendered here byte for byte.

:func:`occupancy_line` is pure: a :class:`LineInput` (``measure().totalTokens``, the window,
the routed request's ``maxTokens``, the pace samples), the plugin's settings and the
previous :class:`LineState` in; the text, its band, every figure behind it and the next
state out. No globals: the caller keeps the state per session, as the plugin does.

Two wordings (:class:`~dshweb.core.settings.occupancy.line_settings.Wording`):

* ``SOURCE_0_1_3`` is ``lib/index.js`` of dsh-context-truth 0.1.3 (commit ``abdc1f8``),
  the newest source published: every string and number rule is taken from it. It has
  no pace, free-window or fold clause and ignores those settings.
* ``README`` (the default) is the later plugin its README describes, whose source is not
  published: the 0.1.3 line plus what the README quotes verbatim (the new authority
  clause, ``About … of the window is still free``, the two fold definitions, ``At this
  session's recent rate that is roughly … more steps``), a silent ``tight`` band by
  default, and a 10K headroom floor on a 1M window. Where the README quotes nothing (the
  Chinese of those clauses, the ``inform`` sentence, where each clause sits, "20+")
  the wording here is our own; :data:`UNVERIFIED` lists those pieces.

The pieces: :mod:`.line_settings` (what shapes the line), :mod:`.figures` (its numbers,
in JavaScript's arithmetic) and :mod:`.text` (its words); this module puts them together.
The band is settled by the ring's own rule (:func:`dshweb.core.fold.gauge.settle_band`)
with the plugin's edges, against the band the state carries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dshweb.core.fold.compaction import threshold_tokens
from dshweb.core.fold.gauge import Band, settle_band
from dshweb.core.fold.pace import PaceEstimate, pace_estimate
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.settings.occupancy.figures import (
    Figures,
    display_step,
    floor_to,
    headroom_step,
    percent_of,
)
from dshweb.core.settings.occupancy.line_settings import LineSettings, Wording
from dshweb.core.settings.occupancy.text import line_text, unknown_text

UNVERIFIED = (
    "zh authority clause (README wording)",
    "zh free-window clause",
    "zh fold definitions",
    "zh pace clause",
    "tightAdvice 'inform' sentence (en and zh)",
    "order of the free, pace and fold clauses within the line",
    "'1 more step' and '20+ more steps' forms",
    "headroom and pace shown in the critical band while it is held by hysteresis",
)
"""Parts of the ``README`` wording no published source or README quote pins down."""


@dataclass(frozen=True, slots=True)
class LineInput:
    """What the plugin reads for one render of the line."""

    used: int | None
    """``tokenMeter.measure(session).totalTokens``."""
    window: int | None
    reserved: int = 0
    """The routed request's ``maxTokens`` (used when ``reservedCompletionTokens`` is null)."""
    pace_samples: tuple[int, ...] = ()
    """Per-step deltas since the last re-base, oldest first (:mod:`dshweb.core.fold.pace`)."""


def line_input(snapshot: SessionSnapshot) -> LineInput:
    """What the plugin would read for this session now."""
    point = snapshot.point
    return LineInput(
        used=snapshot.measured_tokens,
        window=snapshot.context_pressure.get("contextWindow"),
        reserved=point.reserved_tokens if point is not None else 0,
        pace_samples=snapshot.pace_samples,
    )


@dataclass(frozen=True, slots=True)
class LineState:
    """What the plugin remembers per session between two renders."""

    band: Band | None = None
    rung: int | None = None


@dataclass(frozen=True, slots=True)
class BandEdges:
    """Where each band starts, in tokens (of the compaction point, or of the window
    when the line has no point)."""

    moderate: float
    tight: float
    critical: float


@dataclass(frozen=True, slots=True)
class OccupancyLine:
    text: str
    band: Band
    used: int | None
    window: int | None
    reserved: float
    threshold: int | None
    """The compaction point the line reports (from the plugin's own mirror settings)."""
    step: int
    """The display step the used figure is floored to."""
    used_shown: int | None
    percent_shown: int | None
    headroom: int | None
    """``max(0, threshold − used)``."""
    headroom_shown: int | None
    headroom_step: int | None
    free: int | None
    free_shown: int | None
    edges: BandEdges | None
    pace: PaceEstimate | None
    state: LineState
    """Pass it back in with the next reading of the same session."""


# -- the line ------------------------------------------------------------------------------


def occupancy_line(
    reading: LineInput, settings: LineSettings, state: LineState | None = None
) -> OccupancyLine:
    state = state or LineState()
    used, window = reading.used, reading.window
    reserved: float = (
        settings.reserved_completion_tokens
        if settings.reserved_completion_tokens is not None
        else reading.reserved
    )
    threshold: int | None = None
    if settings.show_point and window is not None:
        point = threshold_tokens(
            context_window=window,
            reserved=reserved,
            headroom=settings.headroom_tokens,
            ratio=settings.threshold_ratio,
        )
        if point is not None and 0 < point < window:
            threshold = point
    known = used is not None and window is not None and window > 0
    step = display_step(window, settings.quantum_percent) if window is not None else 1

    if not known or used is None or window is None:
        return OccupancyLine(
            text=unknown_text(settings),
            band=Band.UNKNOWN,
            used=used,
            window=window,
            reserved=reserved,
            threshold=threshold,
            step=step,
            used_shown=None,
            percent_shown=None,
            headroom=None,
            headroom_shown=None,
            headroom_step=None,
            free=None,
            free_shown=None,
            edges=None,
            pace=None,
            state=LineState(Band.UNKNOWN, None),
        )

    base = threshold if threshold is not None else window
    band = settle_band(used / base, state.band, settings.rule)
    used_shown = floor_to(used, step)
    headroom = max(0, threshold - used) if threshold is not None else None
    head_step = headroom_step(headroom, window, settings) if headroom is not None else None
    headroom_shown = (
        floor_to(headroom, head_step) if headroom is not None and head_step is not None else None
    )
    free = max(0, window - used)
    pace = None
    if (
        settings.wording is Wording.README
        and settings.pace_estimate
        and headroom is not None
        and headroom > 0
    ):
        pace = pace_estimate(
            headroom=headroom,
            samples=reading.pace_samples,
            keep=settings.pace_samples,
            need=settings.pace_min_samples,
            margin=settings.pace_margin,
            previous=state.rung,
        )
    figures = Figures(
        used=used,
        used_shown=used_shown,
        step=step,
        window=window,
        percent=percent_of(used_shown, window),
        threshold=threshold,
        headroom=headroom,
        headroom_shown=headroom_shown,
        headroom_step=head_step,
        free=free,
        free_shown=floor_to(free, step),
        pace=pace,
    )
    return OccupancyLine(
        text=line_text(band, figures, settings),
        band=band,
        used=used,
        window=window,
        reserved=reserved,
        threshold=threshold,
        step=step,
        used_shown=used_shown,
        percent_shown=figures.percent,
        headroom=headroom,
        headroom_shown=headroom_shown,
        headroom_step=head_step,
        free=free,
        free_shown=figures.free_shown,
        edges=BandEdges(
            base * settings.rule.moderate_at, base * settings.rule.tight_at, float(base)
        ),
        pace=pace,
        state=LineState(band, pace.rung if pace is not None else None),
    )


def render_lines(
    readings: Sequence[LineInput], settings: LineSettings, state: LineState | None = None
) -> list[OccupancyLine]:
    """The lines for a run of readings of one session, each settled against the last."""
    lines: list[OccupancyLine] = []
    for reading in readings:
        line = occupancy_line(reading, settings, state)
        lines.append(line)
        state = line.state
    return lines
