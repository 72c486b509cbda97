"""The HTML fragments a page is made of, rendered the same way for a first page load
and for every live update over the socket (each fragment's top element has a stable id).
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from dshweb.core.display import ContextReading, breakdown_parts, cache_hit_ratio, dom_id
from dshweb.core.listing import SessionEntry
from dshweb.core.session import SessionSnapshot

ROW_TEMPLATE = "dashboard/_session_row.html"
SESSION_TEMPLATE = "dashboard/_session_live.html"


def session_context(snapshot: SessionSnapshot, reading: ContextReading) -> dict[str, Any]:
    return {
        "session": snapshot,
        "reading": reading,
        "breakdown": breakdown_parts(snapshot.context_breakdown),
        "cache_hit": cache_hit_ratio(snapshot.token_usage),
    }


def rows_html(entries: list[SessionEntry]) -> str:
    """One list row per entry (a new row's id is not on the page yet: the page adds it)."""
    return "".join(render_to_string(ROW_TEMPLATE, {"entry": entry}) for entry in entries)


def row_removed_html(session_id: str) -> str:
    return f'<li id="{dom_id("row", session_id)}" hx-swap-oob="delete"></li>'


def session_html(snapshot: SessionSnapshot, reading: ContextReading) -> str:
    return render_to_string(SESSION_TEMPLATE, session_context(snapshot, reading))


def session_gone_html() -> str:
    return (
        '<div id="live-status" data-state="gone" class="live-status">'
        "This session's log is gone from the DSH home.</div>"
    )
