"""The HTML fragments a page is made of, rendered the same way for a first page load
and for every live update over the socket (each fragment's top element has a stable id).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django.template.loader import render_to_string

from dshweb.core.compact_status import CompactView, compact_view
from dshweb.core.display import ContextReading, breakdown_parts, cache_hit_ratio, dom_id
from dshweb.core.listing import SessionEntry
from dshweb.core.session import SessionSnapshot
from dshweb.dashboard.compact import latest_record
from dshweb.live.hub import SessionView

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
    return compact_view(latest_record(snapshot.session_id), snapshot.ledger)


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


_rendered: OrderedDict[tuple[object, ...], str] = OrderedDict()
_rendered_lock = threading.Lock()
RENDERED_KEPT = 64
"""Session fragments kept rendered: many sockets on one session render it once."""


def session_view_html(view: SessionView) -> str:
    """:func:`session_html` of a hub's session view, rendered once per version (and
    Compact request) whoever asks."""
    key = (view.snapshot.session_id, view.version, latest_record(view.snapshot.session_id))
    with _rendered_lock:
        html = _rendered.get(key)
        if html is not None:
            _rendered.move_to_end(key)
            return html
    html = session_html(view.snapshot, view.reading)
    with _rendered_lock:
        _rendered[key] = html
        while len(_rendered) > RENDERED_KEPT:
            _rendered.popitem(last=False)
    return html


def session_gone_html() -> str:
    return (
        '<div id="live-status" data-state="gone" class="live-status">'
        "This session's log is gone from the DSH home.</div>"
    )
