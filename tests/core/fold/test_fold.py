"""Folding is incremental by construction: any split of a log gives the same state."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dshweb.core.fold import session
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.fold.session import SessionTracker, take_snapshot
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import LogTail
from dshweb.core.profile.effective import EngineConfig
from tests.conftest import all_homes, session_log_paths
from tests.support.differences import differences, fail_on
from tests.support.logbuilder import event, fold_in_pieces, frame, header, typed

LOGS = [path for home in all_homes() for path in session_log_paths(home)]


def _tracker(path: Path) -> SessionTracker:
    return SessionTracker(LogFile(path, 4, compressed=True))


SEEDS = range(3)
"""The random byte splits each log is read in (each about 25 cuts, mid-frame included)."""


def _split_state(tracker: SessionTracker, home: Path) -> dict[str, object]:
    return {
        "meter": tracker.meter,
        "activity": tracker.activity,
        "host_state": tracker.meter.host_state(),
        "ledger": tracker.ledger,
        "snapshot ledger": take_snapshot(
            tracker, home=home, live=False, engine=EngineConfig()
        ).ledger,
    }


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name for p in LOGS])
def test_random_byte_splits_give_the_same_state(log: Path, tmp_path: Path) -> None:
    """Read in the pieces of each of :data:`SEEDS`, a log folds to the meter (every
    field it compares), the activity, the host state, the ledger collector and the
    snapshot's ledger of one whole read (each split read once for all of them)."""
    whole = _tracker(log)
    whole.refresh()
    one = _split_state(whole, tmp_path)
    data = log.read_bytes()
    found: list[str] = []
    for seed in SEEDS:
        folder = tmp_path / f"seed-{seed}"
        folder.mkdir()
        pieces = _split_state(fold_in_pieces(data, seed, folder), tmp_path)
        found += [f"seed {seed}: {d.line('pieces', 'whole')}" for d in differences(pieces, one)]
    fail_on(found, f"{log.parent.name}: read in pieces, unlike one whole read")


def _collected(tracker: SessionTracker) -> dict[str, object]:
    return {
        "meter": tracker.meter,
        "activity": tracker.activity,
        "pace": tracker.pace,
        "ledger": tracker.ledger,
        "told": tracker.told.result(),
        "cost": tracker.cost.result(),
        "requests": tracker.requests.result(),
        "step band": tracker.step_band,
    }


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name for p in LOGS])
def test_quiet_events_fold_as_every_collector_would(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The events the tracker only counts (``QUIET``) leave every collector as folding
    them through all of them does."""
    quick = _tracker(log)
    quick.refresh()
    monkeypatch.setattr(session, "QUIET", frozenset())
    slow = _tracker(log)
    slow.refresh()
    found = [d.line("counted", "folded") for d in differences(_collected(quick), _collected(slow))]
    fail_on(found, f"{log.parent.name}: quiet events counted, unlike folded")
    assert quick.meter.events > 0


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name for p in LOGS])
def test_tail_alone_feeds_the_meter_like_the_tracker(log: Path, tmp_path: Path) -> None:
    whole = _tracker(log)
    whole.refresh()
    copy = tmp_path / "s.zstd"
    shutil.copyfile(log, copy)
    meter = SessionMeter()
    batch = LogTail(copy, compressed=True).read(meter.fold, lambda: None)
    assert batch.events == meter.events == whole.meter.events
    assert meter == whole.meter


def test_state_keeps_prices_not_bodies(tmp_path: Path) -> None:
    big = "x" * 100_000
    path = tmp_path / "b.zstd"
    user = {"role": "user", "content": [{"type": "text", "text": big}], "source": {"kind": "user"}}
    line = event(0, "user/message") | {"data": user, "surfaceOp": "append"}
    path.write_bytes(frame(header()) + frame(line))
    tracker = _tracker(path)
    tracker.refresh()
    (node,) = tracker.meter.nodes
    assert node.tokens == 25_000 + 4 + 4
    assert len(node.preview) <= 80
    assert tracker.meter.surface_tokens == 25_008


def _msg(seq: int, kind: str, text: str, op: object = "append") -> dict[str, object]:
    role = kind.split("/")[0]
    message: dict[str, object] = {"role": role, "content": [{"type": "text", "text": text}]}
    data = message if kind == "user/message" else {"message": message}
    return {"type": kind, "seq": seq, "time": seq, "data": data, "surfaceOp": op}


def _fold(*events: dict[str, object]) -> SessionMeter:
    meter = SessionMeter()
    for item in events:
        meter.fold(typed(item))
    return meter


def test_replace_is_positional_not_numeric() -> None:
    """{startSeq:71, endSeq:59}: an earlier checkpoint 71 sits before node 59 on the surface."""
    meter = _fold(
        _msg(10, "user/message", "a" * 40),
        _msg(59, "user/message", "b" * 40),
        _msg(60, "user/message", "c" * 40),
    )
    meter.fold(
        typed(_msg(71, "user/message", "ckpt", {"op": "replace", "startSeq": 10, "endSeq": 10}))
    )
    assert [n.seq for n in meter.nodes] == [71, 59, 60]
    meter.fold(
        typed(
            {
                "type": "compaction/summary",
                "seq": 72,
                "data": {
                    "shadowedRange": {"start": 71, "end": 59},
                    "shadowedSeqs": [71, 59],
                    "shadowedTokenCount": 20,
                },
            }
        )
    )
    meter.fold(
        typed(_msg(73, "user/message", "z", {"op": "replace", "startSeq": 71, "endSeq": 59}))
    )
    assert [n.seq for n in meter.nodes] == [73, 60]
    assert meter.problems == []


def test_shadow_price_rule() -> None:
    meter = _fold(_msg(0, "user/message", "a" * 400), _msg(1, "user/message", "b" * 400))
    assert meter.surface_tokens == 2 * (100 + 4 + 4)
    # a replace with no armed claim adds nothing
    meter.fold(typed(_msg(2, "user/message", "c", {"op": "replace", "startSeq": 0, "endSeq": 0})))
    assert meter.surface_tokens == 216
    # a claim is cleared by any other event in between
    meter.fold(
        typed(
            {
                "type": "compaction/prune",
                "seq": 3,
                "data": {
                    "shadowedRange": {"start": 1, "end": 1},
                    "shadowedSeqs": [1],
                    "shadowedTokenCount": 108,
                },
            }
        )
    )
    meter.fold(typed({"type": "turn/start", "seq": 4, "data": {"turn": 2}}))
    meter.fold(typed(_msg(5, "user/message", "d", {"op": "replace", "startSeq": 1, "endSeq": 1})))
    assert meter.surface_tokens == 216
    # an armed claim for exactly the range re-prices
    meter.fold(
        typed(
            {
                "type": "compaction/prune",
                "seq": 6,
                "data": {
                    "shadowedRange": {"start": 5, "end": 5},
                    "shadowedSeqs": [5],
                    "shadowedTokenCount": 50,
                },
            }
        )
    )
    meter.fold(
        typed(_msg(7, "user/message", "e" * 8, {"op": "replace", "startSeq": 5, "endSeq": 5}))
    )
    assert meter.surface_tokens == 216 - 50 + (2 + 4 + 4)


def test_unpriced_system_replace_moves_only_the_breakdown_surface() -> None:
    meter = _fold(_msg(0, "system/message", "s" * 400), _msg(1, "user/message", "u" * 40))
    assert (meter.surface_tokens, meter.breakdown_surface_tokens) == (104 + 18, 104 + 18)
    # dsh web re-prompting the session: the system message replaced in place, unpriced
    meter.fold(
        typed(_msg(2, "system/message", "t" * 800, {"op": "replace", "startSeq": 0, "endSeq": 0}))
    )
    assert meter.surface_tokens == 122  # contextPressure: an unpriced replace costs nothing
    assert meter.breakdown_surface_tokens == 122 + (204 - 104)
    assert meter.context_breakdown_view() == {
        "systemTokens": 204,
        "toolsTokens": 0,
        "messageTokens": 18,
    }
    assert meter.host_state()["contextBreakdown"]["surfaceTokens"] == 222
    # the node is now known by the replacing seq: a later replace names that one
    assert meter.systems == [(2, 204)]
    meter.fold(
        typed(_msg(3, "system/message", "v" * 40, {"op": "replace", "startSeq": 2, "endSeq": 2}))
    )
    assert (meter.systems, meter.breakdown_surface_tokens) == ([(3, 14)], 222 - 204 + 14)
    assert meter.surface_tokens == 122


def test_usage_same_step_replaces_and_retry_forgets() -> None:
    def answer(seq: int, step: int, inp: int) -> dict[str, object]:
        return {
            "type": "assistant/attempt",
            "seq": seq,
            "data": {
                "turn": 1,
                "step": step,
                "stream": [
                    {
                        "type": "chunk",
                        "chunk": {
                            "type": "usage",
                            "usage": {"inputTokens": inp, "outputTokens": 1},
                        },
                    }
                ],
            },
        }

    meter = _fold(answer(0, 1, 100), answer(1, 1, 120))
    assert meter.token_usage_view()["uncachedInputTokens"] == 120
    meter.fold(typed({"type": "llm/retry-started", "seq": 2, "data": {"turn": 1, "step": 1}}))
    meter.fold(typed(answer(3, 1, 130)))
    assert meter.token_usage_view() == {
        "uncachedInputTokens": 250,
        "outputTokens": 2,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 0,
    }
    meter.fold(typed(answer(4, 2, 5)))
    assert meter.token_usage_view()["uncachedInputTokens"] == 255
    assert meter.pressure_tokens == 5
