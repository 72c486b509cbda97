"""The compaction ledger: every fold with its figures, and the pressure timeline.

The expected numbers are read straight from the fixture logs' events (the
``compaction/summary`` and ``command/done`` payloads) and from a meter folded here on
its own; the tables below hold the figures those events give.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from django.template.loader import render_to_string

from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.ledger import (
    CONTEXT_WINDOW_EXCEEDED,
    MAX_STEP_POINTS,
    Ledger,
    LedgerCollector,
)
from dshweb.core.fold.meter import SessionMeter, Usage
from dshweb.core.fold.session import SessionTracker, take_snapshot
from dshweb.core.log.home import LogFile, session_logs
from dshweb.core.profile.effective import EngineConfig
from dshweb.sessions.display.timeline import timeline_chart
from dshweb.sessions.fragments import chart_of, ledger_view
from tests.conftest import FIXTURE_HOMES, all_homes, session_log_paths
from tests.support.compactionlog import user_message
from tests.support.differences import differences, fail_on
from tests.support.logbuilder import event, fold_in_pieces, frame, header, log_records, typed

LOGS = [path for home in all_homes() for path in session_log_paths(home)]


def _events(path: Path) -> list[dict[str, Any]]:
    return log_records(path)


def _fixture_log(name: str) -> Path:
    (log,) = session_logs(FIXTURE_HOMES / name)
    return log.path


def _ledger(events: list[dict[str, Any]], threshold: int | None = None) -> Ledger:
    meter, collector = SessionMeter(), LedgerCollector()
    for item in events:
        meter.fold(typed(item))
        collector.observe(typed(item), meter)
    return collector.result(meter, threshold=threshold)


def _tracker(path: Path) -> SessionTracker:
    tracker = SessionTracker(LogFile(path, 4, compressed=True))
    tracker.refresh()
    return tracker


# -- the fixtures, fold by fold ---------------------------------------------------------------

AUTO_MODEL = "deepseek-official/deepseek-flash"

# (kind, seq, end_seq, shadowed, nodes, checkpoint, before, after, summary usage)
FIXTURE_COMPACTIONS: dict[str, list[tuple[Any, ...]]] = {
    "auto-compact": [
        ("automatic", 80, 84, 3788, 12, 178, 13203, 9593, Usage(2546, 76, 7488, 0)),
        ("automatic", 130, 134, 3943, 12, 178, 13367, 9602, Usage(2582, 76, 7616, 0)),
        ("automatic", 180, 184, 3944, 12, 178, 13453, 9687, Usage(2582, 76, 7616, 0)),
    ],
    "manual-compact": [
        ("manual", 69, 73, 426, 14, 171, 6152, 5897, Usage(1674, 69, 4928, 0)),
    ],
    "web-driven": [
        ("manual", 78, 82, 2100, 18, 168, 9899, 7967, Usage(2607, 66, 7744, 0)),
    ],
    "big-tools": [
        ("prune", 44, 47, 3533 + 3516, 2, 2596, 13027, 8574, None),
        ("prune", 66, 67, 3758, 1, 1298, 12459, 9999, None),
    ],
    "cjk-emoji": [
        ("prune", 64, 67, 3656 + 4509, 2, 4184, 13691, 9710, None),
    ],
    "plain-turns": [],
}


@pytest.mark.parametrize("name", sorted(FIXTURE_COMPACTIONS))
def test_fixture_compactions(name: str) -> None:
    ledger = _tracker(_fixture_log(name)).ledger.result(SessionMeter())
    got = [
        (
            f.kind,
            f.seq,
            f.end_seq,
            f.shadowed_tokens,
            f.shadowed_nodes,
            f.checkpoint_tokens,
            f.before,
            f.after,
            f.summary_usage,
        )
        for f in ledger.compactions
    ]
    assert got == FIXTURE_COMPACTIONS[name]
    for compaction in ledger.compactions:
        assert compaction.status == "done"
        assert compaction.error is None
        assert compaction.dropped == compaction.before - compaction.after  # type: ignore[operator]
        if compaction.kind == "prune":
            assert compaction.prunes == compaction.shadowed_nodes
            assert compaction.summary_model is None
        else:
            assert compaction.summary_model == AUTO_MODEL


def test_auto_compact_has_three_automatic_compactions_and_no_command() -> None:
    ledger = _tracker(_fixture_log("auto-compact")).ledger.result(SessionMeter())
    assert [f.turn for f in ledger.compactions] == [5, 8, 11]
    assert all(f.command is None and f.command_text is None for f in ledger.compactions)
    assert (ledger.summaries, ledger.failed, ledger.prune_passes) == (3, 0, 0)
    assert ledger.dropped == 3610 + 3765 + 3766
    assert ledger.refused == ()


MANUAL_TEXT = re.compile(r"Compacted (\d+) history items \(~(\d+) tokens\)\.")


@pytest.mark.parametrize(("name", "command_seq"), [("manual-compact", 68), ("web-driven", 77)])
def test_manual_compaction_carries_its_command(name: str, command_seq: int) -> None:
    (compaction,) = _tracker(_fixture_log(name)).ledger.compactions
    assert (compaction.kind, compaction.turn, compaction.command, compaction.command_seq) == (
        "manual",
        None,
        "/compact",
        command_seq,
    )
    assert compaction.command_kind == "success"
    match = MANUAL_TEXT.fullmatch(compaction.command_text or "")
    assert match is not None, compaction.command_text
    # DSH's own answer counts the shadowed nodes and their price.
    assert (int(match[1]), int(match[2])) == (compaction.shadowed_nodes, compaction.shadowed_tokens)


def test_refused_compact_is_listed_apart() -> None:
    ledger = _tracker(_fixture_log("web-driven")).ledger.result(SessionMeter())
    (refused,) = ledger.refused
    assert (refused.seq, refused.done_seq, refused.command, refused.kind) == (
        71,
        72,
        "/compact",
        "error",
    )
    assert refused.text == (
        "Compaction is unavailable because this process has an active compaction, "
        "or the agent is not idle."
    )
    assert [f.kind for f in ledger.compactions] == ["manual"]


def test_prune_only_sessions_have_no_compaction() -> None:
    for name in ("big-tools", "cjk-emoji"):
        ledger = _tracker(_fixture_log(name)).ledger.result(SessionMeter())
        assert {f.kind for f in ledger.compactions} == {"prune"}
        assert ledger.summaries == 0


# -- every real log: the ledger agrees with the events and a meter folded here -----------


def _expected_from_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Compactions and prune passes read off the events, with a meter of our own."""
    meter = SessionMeter()
    found: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for item in events:
        kind, data = item["type"], item.get("data") or {}
        meter.fold(typed(item))
        if kind == "compaction/start":
            # A failed compaction has no summary: nothing shadowed, no summariser usage.
            current = {"seq": item["seq"], "before": meter.projected_tokens}
            current |= {"shadowed": None, "usage": None}
            found.append(current)
        elif kind == "compaction/summary" and current is not None:
            current["shadowed"] = data["shadowedTokenCount"]
            raw = data.get("usage")
            current["usage"] = (
                (raw["inputTokens"], raw["outputTokens"], raw["cacheReadTokens"]) if raw else None
            )
        elif kind == "compaction/end" and current is not None:
            current["after"] = meter.projected_tokens
            current = None
        elif kind == "compaction/prune":
            last = found[-1] if found else None
            if last is not None and last.get("prune") and last["open"]:
                last["shadowed"] += data["shadowedTokenCount"]
            else:
                found.append(
                    {
                        "seq": item["seq"],
                        "prune": True,
                        "open": True,
                        "before": meter.projected_tokens,
                        "shadowed": data["shadowedTokenCount"],
                    }
                )
        elif kind == "tool/result" and isinstance(item.get("surfaceOp"), dict):
            if found and found[-1].get("prune"):
                found[-1]["after"] = meter.projected_tokens
        elif found and found[-1].get("prune") and not kind.startswith("session-log-"):
            found[-1]["open"] = False  # a plugin's bookkeeping event does not end a pass
    return found


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name for p in LOGS])
def test_compactions_agree_with_the_events(log: Path) -> None:
    events = _events(log)
    ledger = _ledger(events)
    expected = _expected_from_events(events)
    assert [f.seq for f in ledger.compactions] == [e["seq"] for e in expected]
    for compaction, want in zip(ledger.compactions, expected, strict=True):
        assert (compaction.before, compaction.after, compaction.shadowed_tokens) == (
            want["before"],
            want["after"],
            want["shadowed"],
        )
        if compaction.kind != "prune":
            usage = compaction.summary_usage
            got = None if usage is None else (usage.input, usage.output, usage.cache_read)
            assert got == want["usage"]
        if compaction.status == "failed":  # it replaced nothing
            assert (compaction.dropped, compaction.saved, compaction.error is not None) == (
                0,
                None,
                True,
            )
            continue
        # No usage sample falls inside a fold, so by the shadow-price rule the pressure
        # drop is exactly what the checkpoint saved.
        assert compaction.dropped == compaction.saved


# -- incremental --------------------------------------------------------------------------


# Every real log read in random byte splits gives the ledger collector and the snapshot's
# ledger of one whole read: tests/core/fold/test_fold.py's
# test_random_byte_splits_give_the_same_state, which compares them on the same splits it
# folds for the meter (each split folded once for both).


def _assert_splits_agree(data: bytes, seeds: Iterable[int], tmp_path: Path) -> None:
    whole_path = tmp_path / "whole.v4.jsonl.zstd"
    whole_path.write_bytes(data)
    whole = _tracker(whole_path)
    home = tmp_path
    engine = EngineConfig()
    one = {
        "collector": whole.ledger,
        "snapshot": take_snapshot(whole, home=home, live=False, engine=engine).ledger,
    }
    found: list[str] = []
    for seed in seeds:
        folder = tmp_path / f"seed-{seed}"
        folder.mkdir()
        tracker = fold_in_pieces(data, seed, folder)
        pieces = {
            "collector": tracker.ledger,
            "snapshot": take_snapshot(tracker, home=home, live=False, engine=engine).ledger,
        }
        found += [f"seed {seed}: {d.line('pieces', 'whole')}" for d in differences(pieces, one)]
    fail_on(found, "the ledger read in pieces, unlike one whole read")


# -- synthetic logs: failures, overflow, long sessions ----------------------------------------


def _answer(seq: int, turn: int, step: int, prompt: int) -> dict[str, Any]:
    line = event(
        seq,
        "assistant/message",
        turn=turn,
        step=step,
        message={"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        usage={"inputTokens": prompt, "outputTokens": 5, "cacheReadTokens": 0},
        stream=[],
    )
    return line | {"surfaceOp": "append"}


def _refused_attempt(seq: int, code: str = CONTEXT_WINDOW_EXCEEDED) -> dict[str, Any]:
    finish = {
        "type": "chunk",
        "time": 1000 + seq,
        "chunk": {
            "type": "finish",
            "reason": {"kind": "error", "failure": {"message": "too long", "code": code}},
        },
    }
    return event(seq, "assistant/attempt", turn=2, step=1, stream=[finish])


def _summary(seq: int, start: int, end: int, tokens: int, **extra: Any) -> dict[str, Any]:
    return event(
        seq,
        "compaction/summary",
        compactionId="c-1",
        summary=[{"type": "text", "text": "s"}],
        shadowedRange={"start": start, "end": end},
        shadowedSeqs=[start, end],
        shadowedTokenCount=tokens,
        provider="p",
        model="m",
        **extra,
    )


NOT_SMALLER = (
    "summary is not smaller than the shadowed content "
    "(212 estimated framed tokens >= 120 shadowed tokens)"
)


def test_failed_automatic_compaction_is_listed_with_its_error() -> None:
    events = [
        user_message(0, "a" * 400),
        _answer(1, 1, 1, 500),
        event(2, "compaction/start", compactionId="c-1", turn=1),
        event(3, "compaction/end", compactionId="c-1", turn=1, error=NOT_SMALLER),
        event(4, "step/start", turn=1, step=2),
    ]
    ledger = _ledger(events)
    (compaction,) = ledger.compactions
    assert (compaction.kind, compaction.status, compaction.error) == (
        "automatic",
        "failed",
        NOT_SMALLER,
    )
    assert (compaction.shadowed_tokens, compaction.checkpoint_tokens, compaction.summary_usage) == (
        None,
        None,
        None,
    )
    assert compaction.before == compaction.after is not None  # nothing changed on the surface
    assert compaction.dropped == 0
    assert (ledger.summaries, ledger.failed) == (0, 1)


MANUAL_FAILED = "manual compaction could not produce a smaller summary"


def test_failed_manual_compaction_keeps_its_command_answer() -> None:
    events = [
        user_message(0, "a" * 400),
        _answer(1, 1, 1, 500),
        event(2, "command/run", commandId="k1", name="compact", args="keep the plan"),
        event(3, "compaction/start", compactionId="c-1", sourceCommandId="k1", turn=None),
        event(4, "compaction/end", compactionId="c-1", sourceCommandId="k1", turn=None,
              error=NOT_SMALLER),
        event(5, "command/done", commandId="k1")
        | {"data": {"commandId": "k1", "kind": "error", "text": MANUAL_FAILED}},
    ]  # fmt: skip
    (compaction,) = _ledger(events).compactions
    assert (compaction.kind, compaction.status, compaction.command, compaction.command_seq) == (
        "manual",
        "failed",
        "/compact keep the plan",
        2,
    )
    assert compaction.error == NOT_SMALLER
    assert compaction.command_kind == "error"
    assert compaction.command_text == MANUAL_FAILED


def _overflow_log(code: str = CONTEXT_WINDOW_EXCEEDED, step_between: bool = False) -> list[Any]:
    tool = {
        "role": "tool",
        "toolCallId": "t1",
        "content": [{"type": "text", "text": "x" * 4000}],
        "isError": False,
    }
    pruned = {**tool, "content": [{"type": "text", "text": "x" * 400}]}
    events: list[dict[str, Any]] = [
        user_message(0, "a" * 4000),
        _answer(1, 1, 1, 3000),
        event(2, "tool/result", turn=1, step=1, message=tool) | {"surfaceOp": "append"},
        event(3, "step/start", turn=2, step=1),
        _refused_attempt(4, code),
    ]
    if step_between:
        events.append(event(5, "step/start", turn=2, step=2))
    events += [
        event(6, "compaction/prune", shadowedRange={"start": 2, "end": 2}, shadowedSeqs=[2],
              shadowedTokenCount=1008),
        event(7, "tool/result", turn=2, step=1, message=pruned)
        | {"surfaceOp": {"op": "replace", "startSeq": 2, "endSeq": 2}},
        event(8, "compaction/start", compactionId="c-1", turn=2),
        _summary(9, 0, 1, 1020, usage={"inputTokens": 900, "outputTokens": 30}),
        user_message(10, "summary", {"op": "replace", "startSeq": 0, "endSeq": 1}),
        event(11, "compaction/end", compactionId="c-1", turn=2),
        _answer(12, 2, 1, 900),
    ]  # fmt: skip
    return events


def test_overflow_compaction_is_told_by_the_refused_attempt_before_it() -> None:
    ledger = _ledger(_overflow_log())
    assert [f.kind for f in ledger.compactions] == ["prune", "overflow"]
    prune, overflow = ledger.compactions
    assert (prune.shadowed_tokens, prune.checkpoint_tokens) == (1008, 100 + 4 + 4)
    assert prune.dropped == 1008 - 108
    assert (overflow.shadowed_tokens, overflow.checkpoint_tokens) == (1020, 2 + 4 + 4)
    assert overflow.dropped == 1020 - 10
    assert overflow.summary_usage == Usage(900, 30, 0, 0)
    assert overflow.summary_model == "p/m"


@pytest.mark.parametrize(
    ("code", "step_between"), [("RATE_LIMITED", False), (CONTEXT_WINDOW_EXCEEDED, True)]
)
def test_other_failures_or_a_new_step_make_it_automatic(code: str, step_between: bool) -> None:
    kinds = [f.kind for f in _ledger(_overflow_log(code, step_between)).compactions]
    assert kinds == ["prune", "automatic"]


def test_an_open_compaction_has_no_after_yet() -> None:
    events = [user_message(0, "a" * 400), _answer(1, 1, 1, 500)]
    events.append(event(2, "compaction/start", compactionId="c-1", turn=1))
    ledger = _ledger(events)
    (compaction,) = ledger.compactions
    # 500 reported + the answer's own price ("ok": 1 + 4, + 4), as the meter projects it
    assert (compaction.status, compaction.before, compaction.after, compaction.end_seq) == (
        "open",
        509,
        None,
        None,
    )
    assert [(p.seq, p.role) for p in ledger.points] == [(1, "step"), (2, "before")]


def _long_session(steps: int, compaction_every: int) -> list[dict[str, Any]]:
    """Steps with growing usage; an automatic compaction every ``compact_every`` steps."""
    events: list[dict[str, Any]] = [user_message(0, "start " * 100)]
    seq, surface_start = 1, 0
    for step in range(1, steps + 1):
        events.append(user_message(seq, "more " * 40))
        events.append(_answer(seq + 1, step, 1, 1000 + 37 * step))
        seq += 2
        if step % compaction_every == 0:
            events += [
                event(seq, "compaction/start", compactionId="c-1", turn=step),
                _summary(seq + 1, surface_start, seq - 1, 3000),
                user_message(seq + 2, "summary", {"op": "replace", "startSeq": surface_start,
                                           "endSeq": seq - 1}),
                event(seq + 3, "compaction/end", compactionId="c-1", turn=step),
            ]  # fmt: skip
            surface_start = seq + 2
            seq += 4
    return events


def test_long_sessions_keep_a_few_hundred_points_and_every_compaction() -> None:
    events = _long_session(steps=3000, compaction_every=97)
    ledger = _ledger(events, threshold=100_000)
    steps = [p for p in ledger.points if p.role == "step"]
    assert MAX_STEP_POINTS // 2 <= len(steps) <= MAX_STEP_POINTS
    assert len(ledger.compactions) == 3000 // 97
    marked = {(p.seq, p.role) for p in ledger.points}
    for compaction in ledger.compactions:
        assert compaction.status == "done"
        assert (compaction.seq, "before") in marked
        assert (compaction.end_seq, "after") in marked
    seqs = [p.seq for p in ledger.points]
    assert seqs == sorted(seqs)
    # Deterministic: the kept steps are evenly strided over the usage events.
    usage_seqs = [e["seq"] for e in events if e["type"] == "assistant/message"]
    stride = len(usage_seqs[: usage_seqs.index(steps[1].seq)])
    assert [p.seq for p in steps] == usage_seqs[::stride][: len(steps)]
    chart = timeline_chart(ledger)
    assert chart is not None
    assert chart.count == len(ledger.points)
    assert len(chart.markers) == len(ledger.compactions)


def test_a_long_session_folded_in_pieces_gives_the_same_ledger(tmp_path: Path) -> None:
    events = _long_session(steps=700, compaction_every=50)
    data = frame(header())
    for start in range(0, len(events), 40):
        data += frame(*events[start : start + 40])
    _assert_splits_agree(data, [7], tmp_path)


# -- the chart ------------------------------------------------------------------------------


def test_chart_draws_the_compaction_point_and_marks_each_compaction() -> None:
    tracker = _tracker(_fixture_log("auto-compact"))
    ledger = tracker.ledger.result(tracker.meter, threshold=12_000)
    chart = timeline_chart(ledger)
    assert chart.threshold_y is not None and not chart.threshold_above
    assert chart.top <= chart.threshold_y <= chart.bottom
    assert [t.tokens for t in chart.ticks] == [0, 5000, 10_000, 15_000]
    for marker, compaction in zip(chart.markers, ledger.compactions, strict=True):
        assert (marker.kind, marker.seq) == ("automatic", compaction.seq)
        # Above the compaction point before, below it after: y grows downward.
        assert marker.y_before is not None and marker.y_after is not None
        assert marker.y_before < chart.threshold_y < marker.y_after
    assert ledger.points[-1].role == "now"
    assert ledger.points[-1].tokens == tracker.meter.projected_tokens
    assert chart.line.startswith(f"M{chart.left:.1f},")


def test_a_far_compaction_point_does_not_flatten_the_chart() -> None:
    tracker = _tracker(_fixture_log("manual-compact"))
    chart = timeline_chart(tracker.ledger.result(tracker.meter, threshold=678_464))
    assert chart is not None
    assert chart.threshold_above and chart.threshold_y is None
    assert chart.ticks[-1].tokens < 678_464


def test_no_reading_no_chart() -> None:
    ledger = _ledger([user_message(0, "hello")])
    assert ledger.points == () and chart_of(ledger) is None


# -- the partials -----------------------------------------------------------------------------


def _rendered(name: str) -> str:
    index = HomeIndex(FIXTURE_HOMES / name)
    index.refresh()
    (shot,) = index.snapshots()
    reading = context_gauge(shot)
    context = {
        "home_name": "local",
        "session": shot,
        "gauge": reading,
        "timeline_chart": chart_of(shot.ledger),
        "ledger_view": ledger_view(shot.ledger),
    }
    return render_to_string("dashboard/_timeline.html", context) + render_to_string(
        "dashboard/_ledger.html", context
    )


def test_partials_show_each_compaction() -> None:
    html = _rendered("web-driven")
    assert '<section class="card wide" id="ledger"' in html
    assert re.search(r'<figure [^>]*id="timeline"\s+data-points="(\d+)"', html)
    assert html.count('data-kind="manual" data-seq="78"') == 2  # ledger row and chart marker
    assert "Compacted 18 history items (~2100 tokens)." in html
    assert "Compaction is unavailable because this process" in html
    html = _rendered("auto-compact")
    assert html.count('<tr data-kind="automatic"') == 3
    assert 'class="timeline-threshold"' in html
    points = re.search(r'id="timeline"\s+data-points="(\d+)"', html)
    assert points is not None and int(points[1]) > 3


def test_compaction_defaults_are_unknown_not_zero() -> None:
    compaction = Compaction(kind="automatic", seq=1, time=None)
    assert (compaction.dropped, compaction.saved, compaction.status) == (None, None, "open")
