"""The pressure timeline of a ledger, laid out as the geometry of an inline SVG.

:class:`TimelinePoint` is one reading of the projected tokens (a step, a fold's before or
after, or now); :func:`timeline_chart` lays a ledger's points out in a fixed
``CHART_WIDTH × CHART_HEIGHT`` view box: x by seq, y by tokens from zero, each fold marked,
and the compaction point drawn when it is within reach of the peak. Pure geometry: it
reads the ledger (typed by shape, :class:`TimelineSource`, so :mod:`dshweb.core.ledger`
can offer ``Ledger.chart`` without an import cycle) and returns plain numbers and path data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from dshweb.core.folds import Fold, FoldKind

PointRole = Literal["step", "before", "after", "now"]


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    seq: int
    time: int | None
    tokens: int
    role: PointRole
    fold: int | None = None
    """The fold's number (1-based, as the ledger lists it) for a before/after point."""


class TimelineSource(Protocol):
    """What the chart is laid out from: a :class:`~dshweb.core.ledger.Ledger`."""

    @property
    def points(self) -> Sequence[TimelinePoint]: ...

    @property
    def folds(self) -> Sequence[Fold]: ...

    @property
    def threshold(self) -> int | None: ...


CHART_WIDTH = 720
CHART_HEIGHT = 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 56.0, 12.0, 22.0, 26.0
THRESHOLD_REACH = 2.0
"""The y axis stretches to the compaction point only when it is at most this × the peak."""


@dataclass(frozen=True, slots=True)
class Tick:
    y: float
    tokens: int


@dataclass(frozen=True, slots=True)
class FoldMarker:
    number: int
    kind: FoldKind
    status: str
    seq: int
    x: float
    y_before: float | None
    y_after: float | None
    before: int | None
    after: int | None


@dataclass(frozen=True, slots=True)
class TimelineChart:
    """SVG geometry in a ``CHART_WIDTH × CHART_HEIGHT`` view box (y grows downward)."""

    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    line: str
    """Path data through every point, in seq order."""
    area: str
    """The same line closed down to zero tokens."""
    count: int
    first_seq: int
    last_seq: int
    ticks: tuple[Tick, ...]
    threshold_y: float | None
    """Where the compaction point's line is; ``None`` when it is off the chart."""
    threshold_above: bool
    """The compaction point is far above every point, so the y axis does not reach it
    (the folds would be a flat line at the bottom otherwise)."""
    markers: tuple[FoldMarker, ...]
    peak: int


def _nice_step(top: float, ticks: int = 4) -> int:
    """A round tick spacing (1, 2, 2.5 or 5 × 10ⁿ) giving about ``ticks`` ticks up to ``top``."""
    raw = max(top / ticks, 1.0)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * power >= raw:
            return max(1, int(factor * power))
    return int(10 * power)  # pragma: no cover - the loop always returns


def _num(value: float) -> str:
    return f"{value:.1f}"


def timeline_chart(ledger: TimelineSource) -> TimelineChart:
    """Lay the ledger's points out: x by seq, y by tokens from zero, the folds marked."""
    points = ledger.points
    peak = max(p.tokens for p in points)
    threshold = ledger.threshold
    above = threshold is not None and threshold > THRESHOLD_REACH * max(peak, 1)
    shown = threshold if threshold is not None and not above else 0
    top_tokens = max(peak, shown, 1) * 1.05
    step = _nice_step(top_tokens)
    ceiling = step * math.ceil(top_tokens / step)
    left, right = _LEFT, CHART_WIDTH - _RIGHT
    top, bottom = _TOP, CHART_HEIGHT - _BOTTOM
    first, last = points[0].seq, points[-1].seq

    def x_of(seq: int) -> float:
        if last == first:
            return (left + right) / 2
        return left + min(max(seq - first, 0), last - first) / (last - first) * (right - left)

    def y_of(tokens: int) -> float:
        return bottom - min(tokens, ceiling) / ceiling * (bottom - top)

    coords = [(x_of(p.seq), y_of(p.tokens)) for p in points]
    line = "M" + "L".join(f"{_num(x)},{_num(y)}" for x, y in coords)
    area = f"{line}L{_num(coords[-1][0])},{_num(bottom)}L{_num(coords[0][0])},{_num(bottom)}Z"
    markers = tuple(
        FoldMarker(
            number=number,
            kind=fold.kind,
            status=fold.status,
            seq=fold.seq,
            x=round(x_of(fold.seq), 1),
            y_before=round(y_of(fold.before), 1) if fold.before is not None else None,
            y_after=round(y_of(fold.after), 1) if fold.after is not None else None,
            before=fold.before,
            after=fold.after,
        )
        for number, fold in enumerate(ledger.folds, start=1)
    )
    return TimelineChart(
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        line=line,
        area=area,
        count=len(points),
        first_seq=first,
        last_seq=last,
        ticks=tuple(Tick(round(y_of(t), 1), t) for t in range(0, ceiling + 1, step)),
        threshold_y=round(y_of(threshold), 1) if threshold is not None and not above else None,
        threshold_above=above,
        markers=markers,
        peak=peak,
    )
