"""The HTML fragments a page is made of, rendered the same way for a first page load
and for every live update over the socket (each fragment's top element has a stable id).
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from dshweb.core.compact_status import CompactView, RequestRecord, compact_view
from dshweb.core.display import ContextReading, breakdown_parts, cache_hit_ratio, dom_id
from dshweb.core.listing import SessionEntry
from dshweb.core.session import SessionSnapshot
from dshweb.dashboard.models import CompactionRequest

ROW_TEMPLATE = "dashboard/_session_row.html"
SESSION_TEMPLATE = "dashboard/_session_live.html"
COMPACT_TEMPLATE = "dashboard/_compact_status.html"


def session_context(snapshot: SessionSnapshot, reading: ContextReading) -> dict[str, Any]:
    return {
        "session": snapshot,
        "reading": reading,
        "breakdown": breakdown_parts(snapshot.context_breakdown),
        "cache_hit": cache_hit_ratio(snapshot.token_usage),
        "compact": compact_status(snapshot),
    }


def compact_status(snapshot: SessionSnapshot) -> CompactView:
    """The Compact button's status for this session: its latest request and the log."""
    request = CompactionRequest.objects.filter(session_id=snapshot.session_id).first()
    record = (
        None
        if request is None
        else RequestRecord(request.state, request.outcome, request.message, request.seq_at_request)
    )
    return compact_view(record, snapshot.ledger)


def compact_status_html(snapshot: SessionSnapshot) -> str:
    return render_to_string(COMPACT_TEMPLATE, {"compact": compact_status(snapshot)})


def rows_html(entries: list[SessionEntry]) -> str:
    """One list row per entry (a new row's id is not on the page yet: the page adds it)."""
    return "".join(render_to_string(ROW_TEMPLATE, {"entry": entry}) for entry in entries)


def row_removed_html(session_id: str) -> str:
    return f'<li id="{dom_id("row", session_id)}" hx-swap-oob="delete"></li>'


def session_html(snapshot: SessionSnapshot, reading: ContextReading) -> str:
    """The session page's live parts, and the Compact status (which sits in a card of
    the page that is not pushed, beside the per-user button)."""
    context = session_context(snapshot, reading)
    return render_to_string(SESSION_TEMPLATE, context) + render_to_string(COMPACT_TEMPLATE, context)


def session_gone_html() -> str:
    return (
        '<div id="live-status" data-state="gone" class="live-status">'
        "This session's log is gone from the DSH home.</div>"
    )
