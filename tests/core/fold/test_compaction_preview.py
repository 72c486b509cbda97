"""The fold preview (dshweb.core.fold.preview) against the real engine: every fold in the
fixture logs made by the real runtime shadowed exactly the range dshweb computed from the
log just before it began, and every prune cut a result the preview named.

Each ``compaction/start`` is previewed from the log before it: an automatic fold's
compaction (after its prunes) keeps the session's ``retainTokens``; a manual Compact and
a compaction inside a step (the provider refused the step's request as too large) keep
``0`` (DSH_FACTS §7). The preview is then compared with the ``compaction/summary`` the
engine wrote: ``shadowedRange``, ``shadowedSeqs`` and ``shadowedTokenCount``. Before the
first ``compaction/prune`` of a pass, the automatic preview names its cuts; each prune's
``shadowedSeqs`` and ``shadowedTokenCount`` must be one of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from dshweb.core.fold.compaction import measured_tokens
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.fold.point import BETWEEN_STEPS, point_of
from dshweb.core.fold.preview import automatic_preview, manual_preview, select_range
from dshweb.core.fold.pricing import PruneCut
from dshweb.core.log.wire import (
    CompactionPrune,
    CompactionStart,
    CompactionSummary,
    Replace,
    StepStart,
    ToolResult,
)
from dshweb.core.profile.effective import EffectiveSettings, EngineConfig
from tests.conftest import FIXTURE_HOMES
from tests.fixtures.scenarios import SMALL_WINDOW
from tests.support.inferred import events_of
from tests.support.surfaces import node, surface_meter


@dataclass
class Checked:
    """What one session's folds were checked on."""

    compactions: dict[str, int] = field(default_factory=dict)
    """Compactions compared, by how they came (automatic, manual, overflow)."""
    prunes: int = 0
    cuts: int = 0
    """The pruner's replacements priced as the preview said."""
    misses: list[str] = field(default_factory=list)


def _settings(home: Path, index: HomeIndex, folder: Path) -> EffectiveSettings:
    """What the session ran under: its hidden ``--patch`` (the manifest keeps it), or the
    profile and preset its log names."""
    manifest = json.loads((home.parent / "MANIFEST.json").read_text("utf-8"))
    hidden = manifest.get(home.name, {}).get("hidden")
    own = index.settings_of(index.trackers[folder])[1]
    if hidden:
        engine = EngineConfig.from_config(hidden["engine"])
        cut = PruneCut.from_config(hidden.get("prunerConfig")) if hidden["pruner"] else None
        return EffectiveSettings(engine, own.rule, None, pruner=cut)
    if home.name == "patched-point":  # run under `dsh --patch` of the small window
        (row,) = (r for r in yaml.safe_load(SMALL_WINDOW) if r["id"] == "compaction-basic")
        return EffectiveSettings(EngineConfig.from_config(row["config"]), own.rule, None)
    return own


def _previewed(how: str, meter: SessionMeter, settings: EffectiveSettings) -> tuple[list[int], int]:
    """The seqs and the tokens the preview says the compaction starting now shadows."""
    measured = measured_tokens(meter)
    if how == "automatic":
        point = point_of(meter, settings.engine)
        assert point is not None and point.retain_tokens is not None
        preview = automatic_preview(
            meter,
            measured,
            point.threshold_tokens,
            point.retain_tokens,
            pruner=settings.pruner,
        )
        # The engine checked the measure against the point, and pruned what it would cut.
        assert preview.compacts and not preview.cuts
    elif how == "manual":
        preview = manual_preview(meter, measured)
    else:  # inside a step, after the provider refused its request: pruned, keeps 0
        found = select_range(meter.nodes, meter.open_calls, 0)
        if found is None:
            return [], 0
        seqs = meter.node_seqs[found.first : found.keep]
        return seqs, sum(n.tokens for n in meter.nodes[found.first : found.keep])
    if preview.first is None or preview.last is None:
        return [], 0
    first = meter.node_seqs.index(preview.first.seq)
    seqs = meter.node_seqs[first : first + preview.messages]
    assert seqs[-1] == preview.last.seq
    return seqs, preview.shadowed_tokens


def check_home(home: Path) -> dict[str, Checked]:
    index = HomeIndex(home)
    index.refresh()
    checked: dict[str, Checked] = {}
    for folder, tracker in index.trackers.items():
        settings = _settings(home, index, folder)
        result = checked.setdefault(tracker.session_id, Checked())
        meter = SessionMeter()
        in_step = pruning = False
        cuts: dict[int, int] = {}
        afters: dict[int, int] = {}
        said: dict[object, tuple[str, tuple[list[int], int]]] = {}
        for event in events_of(tracker.log):
            kind = type(event)
            if kind is StepStart:
                in_step = True
            elif kind in BETWEEN_STEPS:
                in_step = False
            if isinstance(event, CompactionPrune) and event.data is not None:
                if not pruning:  # a pass begins: what the preview said it would cut
                    preview = automatic_preview(meter, 0, 1, 0, pruner=settings.pruner)
                    cuts = {cut.seq: cut.tokens for cut in preview.cuts}
                    afters = {cut.seq: cut.after for cut in preview.cuts}
                pruning = True
                seqs = event.data.shadowed_seqs or []
                seq = seqs[0] if len(seqs) == 1 else None
                if seq is None or cuts.get(seq) != event.data.shadowed_token_count:
                    result.misses.append(
                        f"prune of {seq} ({event.data.shadowed_token_count} tokens): "
                        f"the preview named {cuts}"
                    )
                result.prunes += 1
            elif kind is StepStart or kind is CompactionStart or kind in BETWEEN_STEPS:
                pruning = False
            if isinstance(event, CompactionStart) and event.data is not None:
                manual = event.data.turn is None
                how = "manual" if manual else "overflow" if in_step else "automatic"
                said[event.data.compaction_id] = (how, _previewed(how, meter, settings))
            if isinstance(event, CompactionSummary) and event.data is not None:
                data = event.data
                how, (shadowed_seqs, tokens) = said.pop(data.compaction_id)
                shadowed = data.shadowed_range
                real = (
                    shadowed.start if shadowed is not None else None,
                    shadowed.end if shadowed is not None else None,
                    list(data.shadowed_seqs or ()),
                    data.shadowed_token_count,
                )
                seqs = shadowed_seqs
                previewed = (seqs[0] if seqs else None, seqs[-1] if seqs else None, seqs, tokens)
                if real != previewed:
                    result.misses.append(
                        f"{how} compaction at seq {event.seq}: the engine shadowed "
                        f"{real[0]}..{real[1]} ({len(real[2])} nodes, {real[3]} tokens), "
                        f"the preview {previewed[0]}..{previewed[1]} "
                        f"({len(seqs)} nodes, {tokens} tokens)"
                    )
                result.compactions[how] = result.compactions.get(how, 0) + 1
            meter.fold(event)
            op = getattr(event, "surface_op", None)
            if pruning and isinstance(event, ToolResult) and isinstance(op, Replace):
                # The pruner's replacement: priced as the preview said the cut would be.
                if afters.get(op.start_seq) != meter.last_price:
                    result.misses.append(
                        f"the cut of {op.start_seq} left {meter.last_price} tokens, "
                        f"the preview said {afters.get(op.start_seq)}"
                    )
                result.cuts += 1
    return checked


HOMES = sorted(home.name for home in FIXTURE_HOMES.iterdir() if (home / "sessions").is_dir())


@pytest.fixture(scope="module")
def every_home() -> dict[str, dict[str, Checked]]:
    return {name: check_home(FIXTURE_HOMES / name) for name in HOMES}


def test_every_real_compaction_shadowed_what_the_preview_said(
    every_home: dict[str, dict[str, Checked]],
) -> None:
    misses = [
        f"{home}/{session}: {miss}"
        for home, sessions in every_home.items()
        for session, checked in sessions.items()
        for miss in checked.misses
    ]
    assert not misses, "\n".join(misses)


def test_the_preview_was_checked_on_compactions_of_every_kind_and_many_shapes(
    every_home: dict[str, dict[str, Checked]],
) -> None:
    by_kind: dict[str, int] = {}
    homes_with_compactions, pruned_homes, prunes, cuts = set(), set(), 0, 0
    for home, sessions in every_home.items():
        for checked in sessions.values():
            for how, count in checked.compactions.items():
                by_kind[how] = by_kind.get(how, 0) + count
                homes_with_compactions.add(home)
            if checked.prunes:
                pruned_homes.add(home)
            prunes += checked.prunes
            cuts += checked.cuts
    # Measured when written: 347 automatic, 6 manual, 1 inside a step (40 sessions); 308
    # prunes (11 homes).
    assert by_kind.get("automatic", 0) >= 340 and by_kind.get("manual", 0) >= 6
    assert by_kind.get("overflow", 0) >= 1
    assert prunes >= 300 and cuts == prunes and len(pruned_homes) >= 10
    assert len(homes_with_compactions) >= 20


SURFACE = [
    node(0, "system/message", 500),
    node(1, "user/message", 100),
    node(2, "assistant/message", 50, calls=2),
    # 9,000 code points of plain text: the default cut leaves 4,096 + 39 + 1,024, priced
    # ⌈5,159 / 4⌉ + 4 + 4 = 1,298.
    node(3, "tool/result", 3_000, calls=-1, shape=9_000),
    node(4, "tool/result", 400, calls=-1),
    node(5, "assistant/message", 80),
    node(6, "user/message", 60),
    node(7, "assistant/message", 40, calls=1),
    node(8, "tool/result", 300, calls=-1),
]


def test_the_range_keeps_a_priced_tail_and_never_cuts_a_call_from_its_result() -> None:
    meter = surface_meter(SURFACE)
    # Keeping 300: the last result alone is priced 300, but its call (7) is before it:
    # the tail goes back to 7. The system prompt is never in the range.
    found = select_range(meter.nodes, meter.open_calls, 300)
    assert found is not None and (found.first, found.keep) == (1, 7)
    assert found.retained == 340 and found.tail_results == 1
    # Keeping 700: 300 + 40 + 60 + 80 = 480, then result 4 makes 880; the cut before 4
    # leaves call 2's second result behind it: back to 2.
    found = select_range(meter.nodes, meter.open_calls, 700)
    assert found is not None and (found.first, found.keep) == (1, 2)
    # Keeping more than there is: nothing to shadow.
    assert select_range(meter.nodes, meter.open_calls, 10_000) is None


def test_an_automatic_compaction_prunes_first_and_compacts_only_if_still_at_the_point() -> None:
    meter = surface_meter(SURFACE)
    measured = meter.nodes_tokens  # 4,530
    # At the point (4,000) now: the cut frees 1,702, which brings it under: no summary.
    only = automatic_preview(meter, measured, 4_000, 300)
    assert [c.seq for c in only.cuts] == [3] and only.pruned_tokens == 1_702
    assert not only.compacts and only.first is None and only.after == (2_828, 2_828)
    # At a point the cut does not get under (2,500): then the compaction, priced after it.
    both = automatic_preview(meter, measured, 2_500, 300)
    assert both.compacts and both.first is not None and both.last is not None
    assert (both.first.seq, both.last.seq, both.messages) == (1, 6, 6)
    assert both.shadowed_tokens == 100 + 50 + 1_298 + 400 + 80 + 60
    assert both.retained_tokens == 340 and both.tool_pairs == 2
    # Without the pruner, no cut and the result's whole price is shadowed.
    plain = automatic_preview(meter, measured, 4_000, 300, pruner=None)
    assert not plain.cuts and plain.shadowed_tokens == both.shadowed_tokens + 1_702


def test_a_compact_now_keeps_only_the_newest_message_and_what_its_calls_need() -> None:
    meter = surface_meter(SURFACE)
    preview = manual_preview(meter, meter.nodes_tokens)
    assert not preview.cuts and preview.first is not None and preview.last is not None
    # The newest node is a result: its call (7) stays with it.
    assert (preview.first.seq, preview.last.seq) == (1, 6)
    assert preview.after is None  # no summary of this session's own to go by yet
