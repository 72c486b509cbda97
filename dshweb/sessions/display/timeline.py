"""The pressure timeline of a ledger, laid out as the geometry of an inline SVG.

:func:`timeline_chart` lays a :class:`~dshweb.core.fold.ledger.Ledger`'s points
(:class:`~dshweb.core.fold.compactions.TimelinePoint`: a step, a fold's before or after, or now)
out in a fixed ``CHART_WIDTH × CHART_HEIGHT`` view box: x by seq, y by tokens from zero,
the folds marked, and the compaction point drawn when it is within reach of the peak.
Pure geometry: it reads the ledger (or any :class:`TimelineSource`) and returns plain
numbers and path data.

The drawing stays the same size however long the session: the line is drawn through
:func:`downsample`, which keeps the lowest and the highest point of each pixel column
(so every peak and trough is drawn exactly: at most ``2 × COLUMNS + 2`` points), and
folds closer than ``MARKER_SPACING`` px to the first fold of a group join that group,
one marker saying how many (at most ``COLUMNS / MARKER_SPACING + 1`` markers). The
full series is the ledger's own, for the downloads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Literal, Protocol

from django.utils.translation import gettext as _

from dshweb import words
from dshweb.core.fold.compactions import Compaction, CompactionKind, TimelinePoint
from dshweb.sessions.display.figures import format_exact, svg_number


class TimelineSource(Protocol):
    """What the chart is laid out from: a :class:`~dshweb.core.fold.ledger.Ledger`, or
    any value of its shape."""

    @property
    def points(self) -> Sequence[TimelinePoint]: ...

    @property
    def compactions(self) -> Sequence[Compaction]: ...

    @property
    def threshold(self) -> int | None: ...


CHART_WIDTH = 720
CHART_HEIGHT = 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 56.0, 12.0, 22.0, 26.0
COLUMNS = int(CHART_WIDTH - _RIGHT - _LEFT)
"""Pixel columns of the plot area: the line keeps a min/max pair of points per column."""
MARKER_SPACING = 8.0
"""Folds less than this many px right of a group's first fold are drawn in that group."""
LABEL_SPACING = 30.0
"""A marker's label is drawn only this many px right of the last label drawn (no overlap)."""
THRESHOLD_REACH = 2.0
"""The y axis stretches to the compaction point only when it is at most this × the peak."""


@dataclass(frozen=True, slots=True)
class Tick:
    y: float
    tokens: int


MarkerKind = CompactionKind | Literal["mixed"]


@dataclass(frozen=True, slots=True)
class CompactionMarker:
    """One fold, or a group of folds too close together to tell apart at this scale.

    ``first``..``last`` are the folds' numbers (1-based, as the ledger lists them);
    ``before`` is the highest reading just before any of them and ``after`` the lowest
    right after one, so the drop drawn spans the group's.
    """

    first: int
    last: int
    kind: MarkerKind
    status: Literal["done", "failed", "open"]
    """``failed`` when any fold of the group failed, else ``open`` when one is open."""
    seq: int
    end_seq: int
    """The last fold's ``seq`` (where it started)."""
    x: float
    """Midway between the first and the last fold's x."""
    x_start: float
    x_end: float
    y_before: float | None
    y_after: float | None
    before: int | None
    after: int | None
    kinds: tuple[tuple[CompactionKind, int], ...]
    """How many folds of each kind, in the order the kinds first appear."""
    failed: int
    labelled: bool
    """Whether its label is drawn (it has room: ``LABEL_SPACING``)."""

    @property
    def count(self) -> int:
        return self.last - self.first + 1

    @property
    def number(self) -> int:
        """The fold's number, for a marker of one fold (the last one's for a group)."""
        return self.last

    @property
    def width(self) -> float:
        """From the first fold's x to the last one's."""
        return round(self.x_end - self.x_start, 1)


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
    """Points in the ledger's series (the line is drawn through at most ``2 × COLUMNS + 2``)."""
    drawn: int
    """Points the line is drawn through (:func:`downsample`)."""
    first_seq: int
    last_seq: int
    ticks: tuple[Tick, ...]
    threshold_y: float | None
    """Where the compaction point's line is; ``None`` when it is off the chart."""
    threshold_above: bool
    """The compaction point is far above every point, so the y axis does not reach it
    (the folds would be a flat line at the bottom otherwise)."""
    markers: tuple[CompactionMarker, ...]
    compactions: int
    """Folds marked, every one in exactly one marker."""
    peak: int

    @property
    def markers_svg(self) -> str:
        """The fold markers, as SVG (:func:`markers_svg`)."""
        return markers_svg(self)

    @property
    def plot_height(self) -> float:
        return self.bottom - self.top

    @property
    def grouped(self) -> bool:
        """Some marker stands for more than one fold."""
        return len(self.markers) < self.compactions

    @property
    def mixed(self) -> bool:
        """Some marker stands for folds of more than one kind."""
        return any(m.kind == "mixed" for m in self.markers)


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


def point_column(seq: int, first: int, last: int, columns: int) -> int:
    """The pixel column (``0 .. columns - 1``) of ``seq`` on an axis from ``first`` to ``last``."""
    if last <= first:
        return 0
    return min(max((seq - first) * columns // (last - first), 0), columns - 1)


def downsample(
    points: Sequence[TimelinePoint], columns: int = COLUMNS
) -> tuple[TimelinePoint, ...]:
    """The points to draw: per pixel column its lowest and its highest point, plus the
    first and the last point, in the series' order.

    Every column's extremes are kept exactly, so the drawn line has each peak and trough
    of the full one; a series of at most ``2 × columns`` points is returned whole.
    """
    if len(points) <= 2 * columns:
        return tuple(points)
    first, last = points[0].seq, points[-1].seq
    low: dict[int, int] = {}
    high: dict[int, int] = {}
    for index, point in enumerate(points):
        column = point_column(point.seq, first, last, columns)
        lowest = low.get(column)
        if lowest is None:
            low[column] = high[column] = index
            continue
        if point.tokens < points[lowest].tokens:
            low[column] = index
        elif point.tokens > points[high[column]].tokens:
            high[column] = index
    keep = {0, len(points) - 1, *low.values(), *high.values()}
    return tuple(points[i] for i in sorted(keep))


def _groups(xs: Sequence[float], spacing: float) -> list[tuple[int, int]]:
    """Index ranges ``[start, end)`` of ``xs`` (ascending) lying within ``spacing`` of the
    range's first x."""
    groups: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(xs) + 1):
        if index == len(xs) or xs[index] - xs[start] >= spacing:
            groups.append((start, index))
            start = index
    return groups


def _kinds(compactions: Sequence[Compaction]) -> tuple[tuple[CompactionKind, int], ...]:
    counts: dict[CompactionKind, int] = {}
    for compaction in compactions:
        counts[compaction.kind] = counts.get(compaction.kind, 0) + 1
    return tuple(counts.items())


def _status(compactions: Sequence[Compaction]) -> Literal["done", "failed", "open"]:
    statuses = {compaction.status for compaction in compactions}
    return "failed" if "failed" in statuses else "open" if "open" in statuses else "done"


def timeline_chart(ledger: TimelineSource) -> TimelineChart:
    """Lay the ledger's points out: x by seq, y by tokens from zero, the folds marked
    (a ledger with at least one point)."""
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

    drawn = downsample(points)
    coords = [(x_of(p.seq), y_of(p.tokens)) for p in drawn]
    line = "M" + "L".join(f"{_num(x)},{_num(y)}" for x, y in coords)
    area = f"{line}L{_num(coords[-1][0])},{_num(bottom)}L{_num(coords[0][0])},{_num(bottom)}Z"
    compactions = ledger.compactions
    xs = [x_of(compaction.seq) for compaction in compactions]
    markers: list[CompactionMarker] = []
    labelled_at = -math.inf
    for start, end in _groups(xs, MARKER_SPACING):
        group = compactions[start:end]
        befores = [f.before for f in group if f.before is not None]
        afters = [f.after for f in group if f.after is not None]
        before = max(befores) if befores else None
        after = min(afters) if afters else None
        kinds = _kinds(group)
        x = (xs[start] + xs[end - 1]) / 2
        labelled = x - labelled_at >= LABEL_SPACING
        if labelled:
            labelled_at = x
        markers.append(
            CompactionMarker(
                first=start + 1,
                last=end,
                kind=kinds[0][0] if len(kinds) == 1 else "mixed",
                status=_status(group),
                seq=group[0].seq,
                end_seq=group[-1].seq,
                x=round(x, 1),
                x_start=round(xs[start], 1),
                x_end=round(xs[end - 1], 1),
                y_before=round(y_of(before), 1) if before is not None else None,
                y_after=round(y_of(after), 1) if after is not None else None,
                before=before,
                after=after,
                kinds=kinds,
                failed=sum(1 for f in group if f.status == "failed"),
                labelled=labelled,
            )
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
        drawn=len(drawn),
        first_seq=first,
        last_seq=last,
        ticks=tuple(Tick(round(y_of(t), 1), t) for t in range(0, ceiling + 1, step)),
        threshold_y=round(y_of(threshold), 1) if threshold is not None and not above else None,
        threshold_above=above,
        markers=tuple(markers),
        compactions=len(compactions),
        peak=peak,
    )


def markers_svg(chart: TimelineChart) -> str:
    """The chart's fold markers as SVG (made here rather than by a template loop: up to
    80 markers of a dozen tags each were most of a session update's render)."""
    return "".join(_marker_svg(chart, m) for m in chart.markers)


def _marker_svg(chart: TimelineChart, m: CompactionMarker) -> str:
    n = svg_number
    kind, status = escape(m.kind), escape(m.status)
    x, top, bottom = n(m.x), n(chart.top), n(chart.bottom)
    parts = [
        f'<g class="timeline-fold fold-{kind} is-{status}" data-kind="{kind}" '
        f'data-seq="{m.seq}" data-first="{m.first}" data-last="{m.last}" data-count="{m.count}">'
    ]
    if m.count == 1:
        said = {
            "number": m.number,
            "kind": escape(words.named(words.COMPACTION_KINDS, m.kind)),
            "seq": m.seq,
            "before": format_exact(m.before),
            "after": format_exact(m.after),
        }
        title = (
            _("#%(number)s %(kind)s fold at seq %(seq)s (failed): %(before)s → %(after)s tokens")
            if m.status == "failed"
            else _("#%(number)s %(kind)s fold at seq %(seq)s: %(before)s → %(after)s tokens")
        )
        parts.append(f"<title>{title % said}</title>")
    else:
        kinds = ", ".join(
            f"{count} {escape(words.named(words.COMPACTION_KINDS, k))}" for k, count in m.kinds
        )
        also = (_(" (%(failed)s failed)") % {"failed": m.failed}) if m.failed else ""
        title = _(
            "%(count)s folds, #%(first)s–#%(last)s, at seq %(seq)s–%(end)s: %(kinds)s%(also)s; "
            "highest before %(before)s, lowest after %(after)s tokens"
        ) % {
            "count": m.count,
            "first": m.first,
            "last": m.last,
            "seq": m.seq,
            "end": m.end_seq,
            "kinds": kinds,
            "also": also,
            "before": format_exact(m.before),
            "after": format_exact(m.after),
        }
        parts.append(
            f"<title>{title}</title>"
            f'<rect class="fold-span" x="{n(m.x_start)}" y="{top}" width="{n(m.width)}" '
            f'height="{n(chart.plot_height)}"></rect>'
        )
    parts.append(f'<line class="fold-guide" x1="{x}" x2="{x}" y1="{top}" y2="{bottom}"></line>')
    before, after = m.y_before, m.y_after
    if before is not None and after is not None:
        parts.append(
            f'<line class="fold-drop" x1="{x}" x2="{x}" y1="{n(before)}" y2="{n(after)}"></line>'
        )
    if before is not None:
        parts.append(f'<circle class="fold-before" cx="{x}" cy="{n(before)}" r="3.5"></circle>')
    if after is not None:
        parts.append(f'<circle class="fold-after" cx="{x}" cy="{n(after)}" r="3.5"></circle>')
    if m.labelled:
        label = m.number if m.count == 1 else f"×{m.count}"
        parts.append(f'<text class="fold-number" x="{x}" y="{top}" dy="-7">{label}</text>')
    parts.append("</g>")
    return "".join(parts)
