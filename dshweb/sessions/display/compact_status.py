"""What the Compact button's status line says, from the request on record and the log.

Pure: the request's recorded state (requested / running / done / failed, DSH's answer)
and the session's :class:`~dshweb.core.fold.ledger.Ledger` give one :class:`CompactView`.
The log moves it forward: a manual ``compaction/start`` after the request means
running, its ``compaction/end`` means done; ``dsh web``'s answer gives the result line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from dshweb.compaction.records import RequestRecord
from dshweb.core.fold.folds import Fold
from dshweb.core.fold.ledger import Ledger
from dshweb.sessions.display.figures import format_page_tokens

State = Literal["idle", "requested", "running", "done", "failed"]

_COMPACTED = re.compile(r"Compacted (\d+) history items? \(~(\d+) tokens?\)")

FAILURES = {
    "busy": "The session is busy: its agent is not idle. Try again when it is idle.",
    "owned_elsewhere": "Another DSH process owns this session; ask that process to compact it.",
    "unreachable": "The DSH engine is unreachable",
    "token_rejected": "The DSH engine rejected the launch token; paste a fresh launch URL.",
    "timeout": "The DSH engine did not answer in time",
    "engine_error": "The DSH engine refused",
    "abandoned": "dshweb stopped while this ran; the session log shows whether DSH folded it.",
    "collector_offline": "Not sent",
    "collector_unreachable": "Not sent",
}


@dataclass(frozen=True, slots=True)
class CompactView:
    state: State
    text: str


def _fold_after(ledger: Ledger | None, seq: int) -> Fold | None:
    if ledger is None:
        return None
    return next((f for f in ledger.folds if f.kind == "manual" and f.seq > seq), None)


def result_line(message: str, fold: Fold | None) -> str:
    """``Compacted N history items (~T tokens); context M → P (freed X)``."""
    found = _COMPACTED.search(message)
    head = (
        f"Compacted {int(found.group(1)):,} history items (~{int(found.group(2)):,} tokens)"
        if found
        else message.rstrip(".") or "Compacted"
    )
    if fold is None or fold.before is None or fold.after is None:
        return head
    freed = fold.before - fold.after
    return (
        f"{head}; context {format_page_tokens(fold.before)} → {format_page_tokens(fold.after)} "
        f"(freed {format_page_tokens(freed)})"
    )


def compact_view(record: RequestRecord | None, ledger: Ledger | None) -> CompactView:
    if record is None:
        return CompactView("idle", "")
    fold = _fold_after(ledger, record.seq_at_request)
    if record.state in ("requested", "running"):
        if fold is None:
            return CompactView("requested", "Compaction requested…")
        if fold.end_seq is None:
            return CompactView("running", "Compacting: DSH's engine is summarising…")
        if fold.error is not None:
            return CompactView("failed", f"The compaction failed: {fold.error}")
        return CompactView("done", result_line(fold.command_text or "", fold))
    if record.state == "done":
        return CompactView("done", result_line(record.message, fold))
    if fold is not None and fold.error is not None:
        return CompactView("failed", f"The compaction failed: {fold.error}")
    reason = FAILURES.get(record.outcome, "The compaction failed")
    detail = record.message.strip()
    if record.outcome in ("busy", "abandoned") or not detail:
        return CompactView("failed", reason)  # DSH's own busy text says the same
    return CompactView("failed", f"{reason.rstrip('.')} — {detail}")
