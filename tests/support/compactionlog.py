"""A long session with many folds, as DSH logs one: for the ledger's pages.

No fixture home has more than a few folds (a real DSH session with hundreds is the
benchmark home, too big to commit), so this writes a log of the same event shapes as
the real ones: steps whose usage grows, and an automatic compaction (start, summary,
the replacing checkpoint, end) every ``compact_every`` steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.logbuilder import event, frame, header

PROJECT = "--w--"


def user_message(seq: int, text: str, op: object = "append") -> dict[str, Any]:
    """A ``user/message`` event: ``text`` from the user, appended (or ``op``)."""
    message = {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "user"},
    }
    return {
        "type": "user/message",
        "seq": seq,
        "time": 1000 + seq,
        "data": message,
        "surfaceOp": op,
    }


def _answer(seq: int, turn: int, prompt: int) -> dict[str, Any]:
    line = event(
        seq,
        "assistant/message",
        turn=turn,
        step=1,
        message={"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        usage={"inputTokens": prompt, "outputTokens": 5, "cacheReadTokens": 0},
        stream=[],
    )
    return line | {"surfaceOp": "append"}


def _compaction(seq: int, turn: int, start: int, end: int | None = None) -> list[dict[str, Any]]:
    """A fold at ``seq`` of the surface from ``start`` to ``end`` (default: the event
    before the fold), which must be the seq of a message on the surface."""
    end = seq - 1 if end is None else end
    return [
        event(seq, "compaction/start", compactionId=f"c-{turn}", turn=turn),
        event(
            seq + 1,
            "compaction/summary",
            compactionId=f"c-{turn}",
            summary=[{"type": "text", "text": "s"}],
            shadowedRange={"start": start, "end": end},
            shadowedSeqs=[start, end],
            shadowedTokenCount=3000,
            provider="p",
            model="m",
        ),
        user_message(seq + 2, "summary", {"op": "replace", "startSeq": start, "endSeq": end}),
        event(seq + 3, "compaction/end", compactionId=f"c-{turn}", turn=turn),
    ]


def long_session(
    steps: int, compaction_every: int, *, first_seq: int = 1, step_ends: bool = False
) -> list[dict[str, Any]]:
    """Events from ``first_seq`` on: ``steps`` steps, a compaction every ``compact_every`` steps
    (with ``step_ends``, each step closed by its ``step/end``, a row of the step export)."""
    events: list[dict[str, Any]] = (
        [user_message(first_seq - 1, "start " * 100)] if first_seq == 1 else []
    )
    seq, surface_start = first_seq, 0
    for step in range(1, steps + 1):
        events += [user_message(seq, "more " * 40), _answer(seq + 1, step, 1000 + 37 * step)]
        seq += 2
        if step_ends:
            events.append(event(seq, "step/end", turn=step, step=1))
            seq += 1
        if step % compaction_every == 0:
            # the fold replaces the surface up to the step's answer (a step/end is not on it)
            events += _compaction(seq, step, surface_start, seq - 2 if step_ends else seq - 1)
            surface_start = seq + 2
            seq += 4
    return events


def write_session(home: Path, session_id: str, events: list[dict[str, Any]]) -> Path:
    """The session's log in ``home`` (header, then one frame per 50 events); its path."""
    folder = home / "sessions" / PROJECT / session_id
    folder.mkdir(parents=True)
    (folder / "session.lock").touch()
    log = folder / "session.v4.jsonl.zstd"
    chunks = [frame(header(session_id))]
    chunks += [frame(*events[start : start + 50]) for start in range(0, len(events), 50)]
    log.write_bytes(b"".join(chunks))
    return log
