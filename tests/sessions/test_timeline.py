"""The timeline drawn at a fixed size: exact extremes, bounded points, every fold marked once.

The expected columns, extremes and groups are computed here from the series with plain
arithmetic, not with the module's own helpers.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from xml.etree import ElementTree

import pytest

from dshweb.core.fold.compactions import Compaction, CompactionKind, TimelinePoint
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.ledger import Ledger
from dshweb.sessions.display.timeline import (
    CHART_WIDTH,
    COLUMNS,
    LABEL_SPACING,
    MARKER_SPACING,
    TimelineChart,
    downsample,
    timeline_chart,
)
from tests.conftest import REPO

BIG_HOME = REPO / "bench" / "data" / "big-home"
KINDS: tuple[CompactionKind, ...] = ("automatic", "manual", "overflow", "prune")


@dataclass(frozen=True, slots=True)
class Series:
    """A ledger by shape (:class:`~dshweb.sessions.display.timeline.TimelineSource`)."""

    points: Sequence[TimelinePoint]
    compactions: Sequence[Compaction]
    threshold: int | None = None


def _series(points: int, compactions: int, seed: int) -> Series:
    """A random walk of ``points`` readings with spikes and dips, and ``folds`` folds."""
    rng = random.Random(seed)
    seq, tokens = 0, 50_000
    drawn: list[TimelinePoint] = []
    for _ in range(points):
        seq += rng.choice((1, 1, 2, 3, 17))
        tokens = max(0, tokens + rng.randint(-900, 1000))
        spike = rng.random()
        value = tokens * 3 if spike < 0.001 else tokens // 5 if spike < 0.002 else tokens
        drawn.append(TimelinePoint(seq, 1_700_000_000_000 + seq, value, "step"))
    seqs = sorted(rng.sample(range(drawn[0].seq, seq + 1), compactions))
    marked = [
        Compaction(
            kind=rng.choice(KINDS),
            seq=at,
            time=None,
            end_seq=at + 3,
            before=rng.randint(100_000, 200_000),
            after=rng.randint(10_000, 90_000),
            error="boom" if rng.random() < 0.01 else None,
        )
        for at in seqs
    ]
    return Series(tuple(drawn), tuple(marked), threshold=168_000)


def _column(seq: int, first: int, last: int) -> int:
    return min(int((seq - first) * COLUMNS / (last - first)), COLUMNS - 1)


def _assert_drawn_keeps_every_column(points: Sequence[TimelinePoint]) -> None:
    drawn = downsample(points)
    assert len(drawn) <= 2 * COLUMNS + 2 <= 2 * CHART_WIDTH
    # A subsequence of the series, in its order, with its first and last point.
    index = {id(p): i for i, p in enumerate(points)}
    positions = [index[id(p)] for p in drawn]
    assert positions == sorted(set(positions))
    assert (drawn[0], drawn[-1]) == (points[0], points[-1])
    assert max(p.tokens for p in drawn) == max(p.tokens for p in points)
    assert min(p.tokens for p in drawn) == min(p.tokens for p in points)
    first, last = points[0].seq, points[-1].seq
    every: dict[int, list[int]] = defaultdict(list)
    kept: dict[int, list[int]] = defaultdict(list)
    for point in points:
        every[_column(point.seq, first, last)].append(point.tokens)
    for point in drawn:
        kept[_column(point.seq, first, last)].append(point.tokens)
    assert kept.keys() == every.keys()
    for column, values in every.items():
        assert min(values) in kept[column] and max(values) in kept[column], column
        if len(points) > 2 * COLUMNS:  # else drawn whole
            assert len(kept[column]) <= 2 + (column in (0, COLUMNS - 1)), column


def _assert_markers_count_every_compaction_once(
    chart: TimelineChart, compactions: Sequence[Compaction]
) -> None:
    numbers = [n for m in chart.markers for n in range(m.first, m.last + 1)]
    assert numbers == list(range(1, len(compactions) + 1))
    assert sum(m.count for m in chart.markers) == len(compactions) == chart.compactions
    assert len(chart.markers) <= COLUMNS / MARKER_SPACING + 1
    for earlier, later in pairwise(chart.markers):
        assert later.x_start - earlier.x_start >= MARKER_SPACING - 0.1
    labels = [m.x for m in chart.markers if m.labelled]
    assert labels and labels[0] == chart.markers[0].x
    assert all(b - a >= LABEL_SPACING - 0.1 for a, b in pairwise(labels))
    for marker in chart.markers:
        group = compactions[marker.first - 1 : marker.last]
        assert marker.x_end - marker.x_start < MARKER_SPACING + 0.1  # x rounded to 0.1 px
        assert (marker.seq, marker.end_seq) == (group[0].seq, group[-1].seq)
        befores = [f.before for f in group if f.before is not None]
        afters = [f.after for f in group if f.after is not None]
        assert marker.before == (max(befores) if befores else None)
        assert marker.after == (min(afters) if afters else None)
        kinds = Counter(f.kind for f in group)
        assert marker.kind == (group[0].kind if len(kinds) == 1 else "mixed")
        assert marker.kinds == tuple((k, kinds[k]) for k in dict.fromkeys(f.kind for f in group))
        assert marker.failed == sum(f.status == "failed" for f in group)
        assert marker.status == ("failed" if marker.failed else "done")


def test_a_100k_point_series_is_drawn_through_its_extremes_only() -> None:
    series = _series(points=100_000, compactions=5_000, seed=7)
    _assert_drawn_keeps_every_column(series.points)
    chart = timeline_chart(series)
    assert chart.count == 100_000
    assert chart.drawn == len(downsample(series.points)) <= 2 * CHART_WIDTH
    assert chart.line.count("L") + 1 == chart.drawn
    assert chart.peak == max(p.tokens for p in series.points)
    _assert_markers_count_every_compaction_once(chart, series.compactions)
    assert any(m.count > 1 for m in chart.markers) and any(m.kind == "mixed" for m in chart.markers)
    assert chart.grouped and chart.mixed


@pytest.mark.parametrize("seed", range(5))
def test_random_series_keep_every_column_extreme(seed: int) -> None:
    rng = random.Random(seed)
    series = _series(points=rng.randint(2 * COLUMNS + 1, 20_000), compactions=50, seed=seed)
    _assert_drawn_keeps_every_column(series.points)
    _assert_markers_count_every_compaction_once(timeline_chart(series), series.compactions)


def test_a_short_series_is_drawn_whole_and_compactions_apart_alone() -> None:
    points = _series(points=2 * COLUMNS, compactions=0, seed=1).points
    last = points[-1].seq
    compactions = [
        Compaction("automatic", seq, None, end_seq=seq + 1) for seq in (5, last // 2, last - 5)
    ]
    chart = timeline_chart(Series(points, compactions))
    assert downsample(points) == tuple(points)
    assert chart.drawn == chart.count == 2 * COLUMNS
    assert [(m.first, m.last, m.number) for m in chart.markers] == [(1, 1, 1), (2, 2, 2), (3, 3, 3)]
    assert all(m.labelled for m in chart.markers) and not chart.grouped


def test_a_flat_series_keeps_one_point_per_column() -> None:
    points = [TimelinePoint(seq, None, 1000, "step") for seq in range(50_000)]
    drawn = downsample(points)
    assert COLUMNS <= len(drawn) <= COLUMNS + 1  # a point per column, and the last
    assert {p.tokens for p in drawn} == {1000}


def test_compactions_at_one_seq_are_one_marker() -> None:
    points = [TimelinePoint(seq, None, seq, "step") for seq in range(10)]
    compactions = [Compaction(kind="prune", seq=5, time=None, end_seq=6, before=9, after=2)] * 12
    (marker,) = timeline_chart(Series(points, compactions)).markers
    assert (marker.first, marker.last, marker.count, marker.kind) == (1, 12, 12, "prune")
    assert marker.width == 0


def test_the_big_session_is_drawn_at_a_fixed_size() -> None:
    if not BIG_HOME.is_dir():
        pytest.skip(f"no benchmark home at {BIG_HOME} (python bench/make_big_home.py)")
    index = HomeIndex(BIG_HOME)
    index.refresh()
    ledger: Ledger = max(index.snapshots(), key=lambda s: len(s.ledger.points)).ledger
    _assert_drawn_keeps_every_column(ledger.points)
    chart = timeline_chart(ledger)
    assert chart.drawn <= 2 * CHART_WIDTH
    _assert_markers_count_every_compaction_once(chart, ledger.compactions)


def _svg(chart: TimelineChart) -> list[ElementTree.Element]:
    from dshweb.sessions.display.timeline import markers_svg

    return list(ElementTree.fromstring(f"<svg>{markers_svg(chart)}</svg>"))


def test_each_marker_is_drawn_as_its_group_of_tags() -> None:
    points = [TimelinePoint(seq, None, 1000 + seq, "step") for seq in range(400)]
    compactions = [
        Compaction("automatic", 10, None, end_seq=12, before=1200, after=300),
        Compaction("prune", 200, None, end_seq=201, before=1500, error="boom"),
        Compaction("manual", 201, None, end_seq=203, before=1400, after=700),
        Compaction("automatic", 202, None, end_seq=204, after=650),
        Compaction("overflow", 398, None),  # open: no end, no figures
    ]
    chart = timeline_chart(Series(points, compactions))
    one, group, last = chart.markers
    assert (one.count, group.count, last.count) == (1, 3, 1)
    drawn = _svg(chart)
    assert [g.get("data-kind") for g in drawn] == ["automatic", "mixed", "overflow"]
    assert [g.get("class") for g in drawn] == [
        "timeline-fold fold-automatic is-done",
        "timeline-fold fold-mixed is-failed",
        "timeline-fold fold-overflow is-open",
    ]
    for g, marker in zip(drawn, chart.markers, strict=True):
        assert [g.get(f"data-{a}") for a in ("seq", "first", "last", "count")] == [
            str(marker.seq),
            str(marker.first),
            str(marker.last),
            str(marker.count),
        ]
        guide = g.find("line[@class='fold-guide']")
        assert guide is not None and guide.get("x1") == guide.get("x2") == f"{marker.x:.3f}"
        assert (guide.get("y1"), guide.get("y2")) == (f"{chart.top:.3f}", f"{chart.bottom:.3f}")
    titles = [g.findtext("title") for g in drawn]
    assert titles == [
        "#1 automatic fold at seq 10: 1,200 → 300 tokens",
        "3 folds, #2–#4, at seq 200–202: 1 prune, 1 manual, 1 automatic (1 failed); "
        "highest before 1,500, lowest after 650 tokens",
        "#5 overflow fold at seq 398: — → — tokens",
    ]
    first, middle, end = drawn
    # A group spans its folds; a drop and both dots only where both figures are known.
    span = middle.find("rect[@class='fold-span']")
    assert span is not None and span.get("width") == f"{group.width:.3f}" != "0.000"
    assert first.find("rect") is None and end.find("rect") is None
    assert first.find("line[@class='fold-drop']").get("y2") == f"{one.y_after:.3f}"  # type: ignore[union-attr]
    assert [c.get("class") for c in first.iter("circle")] == ["fold-before", "fold-after"]
    assert end.find("line[@class='fold-drop']") is None and end.find("circle") is None
    assert [g.findtext("text") for g in drawn] == ["1", "×3", "5"]  # every one has room
