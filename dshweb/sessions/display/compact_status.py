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

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from dshweb.compaction.records import RequestRecord
from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.ledger import Ledger
from dshweb.sessions.display.figures import format_page_tokens
from dshweb.words import said

State = Literal["idle", "requested", "running", "done", "failed"]

_COMPACTED = re.compile(r"Compacted (\d+) history items? \(~(\d+) tokens?\)")

FAILURES = {  # translated when read (gettext_lazy)
    "busy": gettext_lazy("The session is busy: its agent is not idle. Try again when it is idle."),
    "owned_elsewhere": gettext_lazy(
        "Another DSH process owns this session; ask that process to compact it."
    ),
    "unreachable": gettext_lazy("The DSH engine is unreachable"),
    "token_rejected": gettext_lazy(
        "The DSH engine rejected the launch token; paste a fresh launch URL."
    ),
    "timeout": gettext_lazy("The DSH engine did not answer in time"),
    "engine_error": gettext_lazy("The DSH engine refused"),
    "abandoned": gettext_lazy(
        "dshweb stopped while this ran; the session log shows whether DSH folded it."
    ),
    "collector_offline": gettext_lazy("Not sent"),
    "collector_unreachable": gettext_lazy("Not sent"),
}


@dataclass(frozen=True, slots=True)
class CompactView:
    state: State
    text: str


def _compaction_after(ledger: Ledger | None, seq: int) -> Compaction | None:
    if ledger is None:
        return None
    return next((f for f in ledger.compactions if f.kind == "manual" and f.seq > seq), None)


def result_line(message: str, compaction: Compaction | None) -> str:
    """``Compacted N history items (~T tokens); context M → P (freed X)``."""
    found = _COMPACTED.search(message)
    if found:
        items = int(found.group(1))
        head = ngettext(
            "Compacted %(items)s history item (~%(tokens)s tokens)",
            "Compacted %(items)s history items (~%(tokens)s tokens)",
            items,
        ) % {"items": f"{items:,}", "tokens": f"{int(found.group(2)):,}"}
    else:
        head = message.rstrip(".") or str(_("Compacted"))
    if compaction is None or compaction.before is None or compaction.after is None:
        return head
    return _("%(head)s; context %(before)s → %(after)s (freed %(freed)s)") % {
        "head": head,
        "before": format_page_tokens(compaction.before),
        "after": format_page_tokens(compaction.after),
        "freed": format_page_tokens(compaction.before - compaction.after),
    }


def compact_view(record: RequestRecord | None, ledger: Ledger | None) -> CompactView:
    if record is None:
        return CompactView("idle", "")
    compaction = _compaction_after(ledger, record.seq_at_request)
    if record.state in ("requested", "running"):
        if compaction is None:
            return CompactView("requested", _("Compaction requested…"))
        if compaction.end_seq is None:
            return CompactView("running", _("Compacting: DSH's engine is summarising…"))
        if compaction.error is not None:
            return _failed(compaction.error)
        return CompactView("done", result_line(compaction.command_text or "", compaction))
    if record.state == "done":
        return CompactView("done", result_line(record.message, compaction))
    if compaction is not None and compaction.error is not None:
        return _failed(compaction.error)
    reason = str(FAILURES.get(record.outcome, _("The compaction failed")))
    detail = said(record.message.strip())
    if record.outcome in ("busy", "abandoned") or not detail:
        return CompactView("failed", reason)  # DSH's own busy text says the same
    return CompactView("failed", f"{reason.rstrip('.')} — {detail}")


def _failed(error: str) -> CompactView:
    return CompactView("failed", _("The compaction failed: %(error)s") % {"error": error})
