"""The settings replay (dshweb.core.fold.replay) against the real runtime.

A session's recorded growth replayed under its own settings gives back the folds the
engine made; replayed under other settings, it gives the folds the real runtime made when
the same fake-model script ran again under them (the ``replay-*`` fixture homes:
``tests/fixtures/scenarios.py``, ``REPLAYS``): as many, ±1, each within 2 steps (six of
the seven; the seventh has one fold of 25 three steps off, marked as such).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.meter import SurfaceNode, surface_message
from dshweb.core.fold.pricing import pruned_price
from dshweb.core.fold.replay import Check, Recording, record, replay
from dshweb.core.log.decode import raw_as
from dshweb.core.log.jsjson import js_len
from dshweb.core.log.wire import Block, ToolResult
from dshweb.core.profile.effective import EffectiveSettings, EngineConfig
from dshweb.core.profile.plugins import PRUNE_MARKER
from dshweb.core.profile.pruner import DEFAULT_CUT, PruneCut
from tests.conftest import FIXTURE_HOMES
from tests.core.fold.test_compaction_preview import HOMES, _settings
from tests.fixtures.scenarios import REPLAYS
from tests.support.inferred import events_of


def _session(name: str) -> tuple[Recording, EffectiveSettings, bool]:
    """The recording of a one-session fixture home, the settings it ran under, and whether
    a compaction in it failed (its summary was not smaller: the replay cannot know)."""
    home = FIXTURE_HOMES / name
    index = HomeIndex(home)
    index.refresh()
    ((folder, tracker),) = index.trackers.items()
    failed = any(f.status == "failed" for f in index.snapshot(folder).ledger.compactions)
    return record(events_of(tracker.log)), _settings(home, index, folder), failed


def side_by_side(real: tuple[int, ...], replayed: tuple[int, ...]) -> str:
    """Both fold histories, check by check, for a failure message."""
    rows = [f"{'runtime':>8} {'replay':>8}"]
    for index in range(max(len(real), len(replayed))):
        a = str(real[index]) if index < len(real) else "-"
        b = str(replayed[index]) if index < len(replayed) else "-"
        rows.append(f"{a:>8} {b:>8}")
    return "\n".join(rows)


def close(real: tuple[int, ...], replayed: tuple[int, ...], steps: int = 2) -> bool:
    """As many folds, ±1, and each replayed one within ``steps`` of one of the runtime's."""
    near = [b for b in replayed if any(abs(a - b) <= steps for a in real)]
    return abs(len(real) - len(replayed)) <= 1 and len(near) == len(replayed)


ONE_SESSION = [name for name in HOMES if len(list((FIXTURE_HOMES / name).rglob("*.zstd"))) == 1]


RETAIN_PRUNES_DRIFT = pytest.mark.xfail(
    strict=True,
    reason="a retain of 8,239 with a big result every third step: the replay's folds "
    "drift up to 2 steps from the runtime's after its 4th (20 for 21, 27 for 25); its "
    "summaries' estimated sizes move the measure by more than the session's own did",
)
"""Measured when the fixture was made (issue 48's shapes); the what-if replay is not
this issue's subject, and is left as it was found."""


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=RETAIN_PRUNES_DRIFT) if name == "unrecorded-retain-3" else name
        for name in ONE_SESSION
    ],
)
def test_a_session_replayed_under_its_own_settings_compacts_where_it_did(name: str) -> None:
    recording, settings, failed = _session(name)
    if settings.engine is None:
        pytest.skip("no engine")
    replayed = replay(recording, settings.engine, pruner=settings.pruner)
    real, said = recording.acted, replayed.automatic
    if failed:  # the engine tried again at the next step: the replay's summary did not fail
        assert close(real, said), side_by_side(real, said)
    else:
        assert said == real, side_by_side(real, said)


OFF_BY_THREE = pytest.mark.xfail(
    strict=True,
    reason="25 folds for the runtime's 26, one of them 3 steps from the runtime's nearest: "
    "after the base session's folds and these diverge, the measure is moved by the "
    "difference at the session's average provider-to-heuristic rate, which this cycle of "
    "slow and fast steps (and a point 2,000 lower) strains",
)
"""Measured when written; the other six replays hold every fold within 2 steps."""


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=OFF_BY_THREE) if name == "replay-cycle-a-headroom" else name
        for name in sorted(REPLAYS)
    ],
)
def test_other_settings_replayed_compact_where_the_real_runtime_did(name: str) -> None:
    base, _ = REPLAYS[name]
    recording, _, _ = _session(base)
    ran, settings, _ = _session(name)
    assert settings.engine is not None
    replayed = replay(recording, settings.engine, pruner=settings.pruner)
    real, said = ran.acted, replayed.automatic
    assert len(real) >= 3
    assert close(real, said), f"{name} (from {base}):\n" + side_by_side(real, said)


def test_the_replays_were_checked_on_six_sessions_and_other_settings_change_the_compactions() -> (
    None
):
    assert len(REPLAYS) >= 6 and len({base for base, _ in REPLAYS.values()}) >= 4
    changed = 0
    for name, (base, _) in REPLAYS.items():
        changed += _session(name)[0].acted != _session(base)[0].acted
    assert changed == len(REPLAYS)


def _check(*tokens: int, window: int = 24_000) -> Check:
    nodes = tuple(SurfaceNode(i, "user/message", t, "") for i, t in enumerate(tokens))
    return Check(nodes, window, 3_000, 0)


def test_a_replay_by_hand() -> None:
    # A system prompt of 1,000, then steps of 2,000 each; the point at 12,000 (ratio 0.5,
    # headroom 1,000): the check before the sixth step measures 1,000 + 5 × 2,000 =
    # 11,000, the seventh's 13,000: the fold. Keeping 4,000 (two steps), the summary of
    # 500 replaces four steps (8,000): 1,000 + 500 + 4,000 = 5,500.
    system = SurfaceNode(0, "system/message", 1_000, "")
    steps = [Check((system,), 24_000, 3_000, 0)] + [_check(2_000) for _ in range(12)]
    recording = Recording(tuple(steps), summaries=(500,))
    engine = EngineConfig(threshold_ratio=0.5, headroom_tokens=1_000, retain_tokens=4_000)
    said = replay(recording, engine)
    first = said.passes[0]
    assert (first.check, first.kind, first.before, first.after) == (6, "compaction", 13_000, 5_500)
    assert first.shadowed == 8_000 and (said.peak, said.lowest) == (13_500, 5_500)
    assert said.automatic == (6, 10)  # 5,500 + 4 × 2,000 = 13,500 four steps on
    assert said.summary_input == 8_000 + 8_500 and said.summary_output == 1_000
    # A summary no smaller than what it would replace (9,000 for 8,000): the compaction
    # fails; at the next check the range is a step longer (10,000) and it holds.
    failing = replay(recording, engine, summary=9_000)
    (failed, held, *_) = failing.passes
    assert (failed.check, failed.kind, held.check, held.kind) == (6, "failed", 7, "compaction")
    assert held.shadowed == 10_000 and failing.automatic[:2] == (6, 7)


def test_the_replay_of_the_largest_fixture_session_is_fast_enough_to_follow_a_form() -> None:
    # Measured in bench/, not here: this only checks the replay reads every check.
    recording, settings, _ = _session("prune-heavy")
    assert settings.engine is not None and len(recording.checks) > 400
    said = replay(recording, settings.engine, pruner=settings.pruner)
    assert said.passes and said.passes[-1].check > 400


def test_the_fixture_manifest_names_every_replay_home() -> None:
    manifest = json.loads((FIXTURE_HOMES / "MANIFEST.json").read_text("utf-8"))
    assert set(REPLAYS) <= set(manifest)
    assert all((FIXTURE_HOMES / name / "sessions").is_dir() for name in REPLAYS)
    assert Path(FIXTURE_HOMES).is_dir()


def _text(event: ToolResult) -> str:
    """The text of a tool result's one text block."""
    message = surface_message(event)
    content = message.content if message is not None else None
    assert isinstance(content, list) and len(content) == 1
    block = raw_as(content[0], Block)
    assert block is not None and block.type == "text" and block.text is not None
    return block.text


def test_a_lower_cut_prunes_the_results_between_it_and_the_defaults() -> None:
    # auto-compact: each of its 8 tool results is one text block of 6,800-6,970 code
    # points, under the default 8,192: the session never pruned, and its three folds were
    # compactions. A profile's cut at 6,000 prunes every one of them.
    home = FIXTURE_HOMES / "auto-compact"
    index = HomeIndex(home)
    index.refresh()
    ((_, tracker),) = index.trackers.items()
    settings = index.settings_of(tracker)[1]
    assert settings.engine is not None and settings.pruner == DEFAULT_CUT
    events = events_of(tracker.log)
    recording = record(events)
    results = {e.seq: e for e in events if isinstance(e, ToolResult) and e.surface_op == "append"}
    assert len(results) == 8 and all(6_000 < len(_text(e)) <= 8_192 for e in results.values())
    cut = PruneCut(6_000, 2_500, 700)
    freed: dict[int, int] = {}
    for check in recording.checks:
        for node in check.added:
            if node.seq not in results:
                continue
            assert node.shape is not None and pruned_price(node.shape) is None
            text = _text(results[node.seq])
            kept = text[: cut.head] + PRUNE_MARKER + text[-cut.tail :]  # pruneContent's
            after = pruned_price(node.shape, cut)
            assert after == -(-js_len(kept) // 4) + 4 + 4 < node.tokens
            freed[node.seq] = node.tokens - after
    assert freed.keys() == results.keys()
    engine = settings.engine
    own, low = replay(recording, engine), replay(recording, engine, pruner=cut)
    assert own.automatic == recording.acted == (8, 13, 18)
    assert {f.kind for f in own.passes} == {"compaction"}
    assert replay(recording, engine, pruner=None) == own  # nothing to prune at 8,192
    # Under the lower cut the pruner alone resolves the first check past the point: it
    # frees what the results on the surface by then lose to the cut.
    first = low.passes[0]
    on_surface = {n.seq for c in recording.checks[:9] for n in c.added} & freed.keys()
    assert (first.check, first.kind) == (8, "prune")
    assert first.before - first.after == sum(freed[s] for s in on_surface) > 0
    assert first.after < (low.threshold or 0)
    assert [f.kind for f in low.passes] != [f.kind for f in own.passes]


@pytest.mark.parametrize(
    "name", ["pruner-profile-low", "pruner-profile-high", "pruner-profile-off"]
)
def test_the_profiles_cut_replays_the_runtimes_compactions(name: str) -> None:
    # Sessions the real runtime ran with the pruner set in their profile: read from the
    # profile, its cut replays the engine's folds exactly; the defaults' would not.
    home = FIXTURE_HOMES / name
    hidden = json.loads((FIXTURE_HOMES / "MANIFEST.json").read_text("utf-8"))[name]["hidden"]
    index = HomeIndex(home)
    index.refresh()
    ((_, tracker),) = index.trackers.items()
    own = index.settings_of(tracker)[1]
    ran = PruneCut.from_config(hidden["prunerConfig"]) if hidden["pruner"] else None
    assert own.pruner == ran and own.error is None and own.engine is not None
    recording = record(events_of(tracker.log))
    said = replay(recording, own.engine, pruner=own.pruner)
    assert said.automatic == recording.acted, side_by_side(recording.acted, said.automatic)
    if own.pruner is not None:
        defaults = replay(recording, own.engine, pruner=DEFAULT_CUT)
        assert defaults.automatic != recording.acted
