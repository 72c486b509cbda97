"""What the model was told: dsh-context-truth's last line, read from real logs.

The ``told-*`` fixture homes were written by the real runtime with the published plugin
installed in their sdk profile (tests/fixtures/scenarios.py ``run_told``): ``told-truth``
with the plugin mirroring the engine's point (12,000 on a 24,000 window), and
``told-unmirrored`` with the plugin at its defaults, which name no point on that window.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.fold.checkpoint import dump_checkpoint, load_checkpoint
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.line_tokens import format_line_tokens
from dshweb.core.fold.told import BANDS, SECTION, Told, ToldLine, read_line, told_gap
from tests.conftest import FIXTURE_HOMES
from tests.fixtures.dshrun import session_logs
from tests.support.snapshots import fixture_snapshot

TOLD_HOMES = ("told-truth", "told-unmirrored")
WINDOW, POINT = 24_000, 12_000
STEP = WINDOW * 5 // 100
"""The plugin's display step: ``quantumPercent`` 5 of the window."""


def _told_events(name: str) -> list[dict[str, Any]]:
    """The log's runtime-context messages carrying the plugin's section, read as JSON
    here (not through the fold)."""
    log = session_logs(FIXTURE_HOMES / name)[name]
    return [
        e
        for e in log.events
        if e["type"] == "user/message"
        and (e["data"].get("source") or {}).get("kind") == "runtime-context"
        and any(s.get("name") == SECTION for s in e["data"]["source"].get("sections", []))
    ]


def _line_at(name: str, seq: int) -> ToldLine:
    line = fixture_snapshot(name, seq).told.line
    assert line is not None
    return line


def test_a_line_is_read_for_its_figures_and_its_band_in_either_language() -> None:
    english = (
        "Context occupancy (host-measured): 10K / 24K tokens used (40%). Automatic "
        "compaction fires at 12K (50% of the window). About 2K tokens of headroom remain "
        "before it. There is still real headroom — keep going."
    )
    assert read_line(english) == {
        "used": 10_000,
        "window": 24_000,
        "point": 12_000,
        "headroom": 2_000,
        "percent": 40,
        "band": "moderate",
        "band_from": "words",
    }
    # The plugin's Chinese rendering of a tight line (lib/index.js, language: zh).
    chinese = (
        "上下文实况（宿主实测）：已用 11K / 1.00M（45%）。 自动压缩阈值 678K（窗口的 68%）。"
        " 距阈值不足 2K tokens。 余量确实不多了——收完当前这一步、把状态落到磁盘，再考虑交接。"
    )
    assert read_line(chinese) == {
        "used": 11_000,
        "window": 1_000_000,
        "point": 678_000,
        "headroom": None,  # "under 2K": no figure to hold it to
        "percent": 45,
        "band": "tight",
        "band_from": "words",
    }
    assert read_line("Context occupancy: no reading yet in this session.")["band"] == "unknown"


def test_a_wording_it_does_not_know_gets_its_band_from_the_figures() -> None:
    # Later plugin versions end the tight band with no sentence, only the pace.
    later = (
        "Context occupancy (host-measured): 11K / 24K tokens used (45%). Automatic "
        "compaction fires at 12K (50% of the window). Under 2K tokens of headroom remain "
        "before it. At this session's recent rate that is roughly 2 more steps."
    )
    read = read_line(later)
    assert (read["band"], read["band_from"]) == ("tight", "figures")  # 11/12 ≥ 0.85
    # No point named: by the window, as the plugin does.
    calm = "Context occupancy (host-measured): under 50K / 1.00M tokens used (under 5%)."
    read = read_line(calm)
    assert (read["used"], read["window"], read["percent"]) == (None, 1_000_000, None)
    assert (read["band"], read["band_from"]) == ("ample", "figures")


@pytest.mark.parametrize("name", TOLD_HOMES)
def test_the_last_line_is_the_last_snapshot_the_log_gave(name: str) -> None:
    events = _told_events(name)
    assert len(events) >= 30  # every time the rendered line moved
    told = fixture_snapshot(name).told
    assert told.lines == len(events) == told.snapshots
    last = events[-1]
    (section,) = [s for s in last["data"]["source"]["sections"] if s["name"] == SECTION]
    assert told.line is not None
    assert (told.line.seq, told.line.time, told.line.text) == (
        last["seq"],
        last["time"],
        section["text"],
    )
    # At every line, the snapshot cut there shows that line.
    for event in events[::7]:
        assert _line_at(name, event["seq"]).seq == event["seq"]


@pytest.mark.parametrize("name", TOLD_HOMES)
def test_what_the_model_was_told_is_what_dshweb_measured_then(name: str) -> None:
    """The plugin floors the host's measure to its display step and prints it in K: at
    every line but those read before a fold, dshweb's measure at that moment prints the
    same. The band by the plugin's rule on that measure (edges 0.5 and 0.85 of the point
    it names, or of the window; 5% hysteresis downward) is the band the line words."""
    checked = folded = 0
    previous: str | None = None
    for event in _told_events(name)[1:]:  # the first says there is no reading yet
        line = _line_at(name, event["seq"])
        if line.read_before_a_compaction:
            # Given right after a fold, with the reading that started it (at the point:
            # critical by the point, or half the window by the window's measure).
            assert line.used is not None and line.used >= POINT
            assert line.band == ("critical" if line.point else "moderate")
            assert fixture_snapshot(name, event["seq"]).ledger.summaries > 0
            folded += 1
            previous = line.band
            continue
        assert line.used == (line.measured // STEP * STEP + 500) // 1000 * 1000
        assert f"{format_line_tokens(line.measured // STEP * STEP)} / 24K" in line.text
        ratio = line.measured / (line.point or WINDOW)
        raw = BANDS[sum(ratio >= edge for edge in (0.5, 0.85, 1.0))]
        floors = {"ample": 0.0, "moderate": 0.5, "tight": 0.85, "critical": 1.0}
        settled = (
            raw
            if previous is None
            or BANDS.index(raw) >= BANDS.index(previous)
            or ratio <= floors[previous] - 0.05
            else previous
        )
        assert line.band == settled, (event["seq"], line.measured, line.text)
        previous = line.band
        checked += 1
    assert checked >= 20 and folded >= 5


def test_a_line_given_right_after_a_compaction_tells_the_model_of_the_point_it_left() -> None:
    (after,) = [e for e in _told_events("told-truth") if e["seq"] == 100]
    line = _line_at("told-truth", after["seq"])
    assert line.read_before_a_compaction and line.band == "critical" and line.measured < POINT
    shot = fixture_snapshot("told-truth", after["seq"])
    gap = told_gap(shot.told, "moderate", shot.threshold)
    assert gap is not None
    assert (gap.told, gap.now, gap.bands, gap.disagrees, gap.point) == (
        "critical",
        "moderate",
        2,
        True,
        None,  # it names the engine's own point
    )


def test_a_plugin_that_does_not_mirror_the_engine_names_no_point_and_calms_the_model() -> None:
    shot = fixture_snapshot("told-unmirrored")
    line = shot.told.line
    assert line is not None and line.point is None and line.band == "ample"
    assert shot.threshold == POINT
    gap = told_gap(shot.told, "tight", shot.threshold)
    assert gap is not None and (gap.bands, gap.point) == (2, "missing")
    # The mirrored one names the engine's point: nothing to say about it.
    mirrored = fixture_snapshot("told-truth")
    assert mirrored.told.line is not None and mirrored.told.line.point == POINT
    assert told_gap(mirrored.told, "moderate", mirrored.threshold).point is None  # type: ignore[union-attr]
    assert told_gap(mirrored.told, "moderate", 16_800).point == "differs"  # type: ignore[union-attr]


def test_a_point_at_an_exact_binary_half_is_the_one_the_plugin_names() -> None:
    """1,125,000 is ``1.13M`` in the plugin's line (``toFixed`` rounds the binary 1.125 up):
    a line naming ``1.13M`` names that point, and one naming ``1.12M`` does not."""
    line = "Context occupancy (host-measured): 600K / 2.00M tokens used (30%). Automatic "
    said = read_line(line + "compaction fires at 1.13M (56% of the window).")
    assert said["point"] == 1_130_000
    told = Told(ToldLine(seq=1, time=1, text=line, measured=600_000, **said), 1, 1)
    assert told_gap(told, "moderate", 1_125_000).point is None  # type: ignore[union-attr]
    said = read_line(line + "compaction fires at 1.12M (56% of the window).")
    told = Told(ToldLine(seq=1, time=1, text=line, measured=600_000, **said), 1, 1)
    assert told_gap(told, "moderate", 1_125_000).point == "differs"  # type: ignore[union-attr]


def test_a_session_without_the_plugin_was_told_nothing() -> None:
    shot = fixture_snapshot("auto-compact")
    assert shot.told.line is None and shot.told.lines == 0
    assert shot.told.snapshots > 0  # runtime context, but not the plugin's
    gap = told_gap(shot.told, "ample")
    assert gap is not None and (gap.told, gap.disagrees) == ("nothing", False)  # nothing stale
    assert told_gap(shot.told, "unknown") is None  # nothing known to disagree with
    assert told_gap(Told(), "tight") == gap.__class__("nothing", "tight", 1)


def test_compactions_after_the_line_are_counted_until_the_next_line() -> None:
    events = _told_events("told-truth")
    log = session_logs(FIXTURE_HOMES / "told-truth")["told-truth"]
    start = next(e["seq"] for e in log.of_type("compaction/start"))
    before = max(e["seq"] for e in events if e["seq"] < start)
    line = fixture_snapshot("told-truth", start).told.line
    assert line is not None and (line.seq, line.compactions_since) == (before, 1)
    assert _line_at("told-truth", before).compactions_since == 0


@pytest.mark.parametrize("name", TOLD_HOMES)
def test_the_line_survives_a_checkpoint(name: str, tmp_path: Path) -> None:
    home = FIXTURE_HOMES / name
    cut = _told_events(name)[10]["seq"] + 3
    index = HomeIndex(home, stop_after_seq=cut)
    index.refresh()
    (folder,) = index.trackers
    tracker = index.trackers[folder]
    blob = dump_checkpoint(tracker, key=b"k" * 32)
    restored = load_checkpoint(tracker.log, blob, key=b"k" * 32)
    assert restored is not None
    assert restored.told.result() == tracker.told.result()
    assert restored.told.result().line is not None


def test_the_json_carries_the_line() -> None:
    shot = fixture_snapshot("told-truth")
    said = json.loads(json.dumps(shot.as_json()))["told"]
    line = shot.told.line
    assert line is not None
    assert said == {
        "seq": line.seq,
        "time": line.time,
        "text": line.text,
        "band": line.band,
        "bandFrom": "words",
        "usedTokens": line.used,
        "windowTokens": WINDOW,
        "thresholdTokens": POINT,
        "headroomTokens": line.headroom,
        "percent": line.percent,
        "measuredTokens": line.measured,
        "foldsSince": 0,
    }
    assert fixture_snapshot("auto-compact").as_json()["told"] is None
