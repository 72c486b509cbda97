"""Which sessions the list shows: a text query and a live/idle choice.

Pure, no Django. The page applies the same rule in the browser as a person types
(``static/dshweb/live.js``, on the rows' ``data-search`` and ``data-live``), so the two
must agree: the query is lower-cased and split on whitespace, and a session matches
when every term occurs in its search text (title, id, folder and model, lower-cased)
and its state is the one chosen. Filtering hides rows; it never changes the tree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from dshweb.core.session import SessionSnapshot


class SessionState(StrEnum):
    ALL = "all"
    LIVE = "live"
    IDLE = "idle"


@dataclass(frozen=True, slots=True)
class SessionFilter:
    query: str = ""
    state: SessionState = SessionState.ALL

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(self.query.lower().split())

    @property
    def active(self) -> bool:
        return bool(self.terms) or self.state is not SessionState.ALL


def session_filter(*, query: str | None = None, state: str | None = None) -> SessionFilter:
    """The filter from the page's ``?q=…&state=…``; an unknown state shows every session."""
    try:
        chosen = SessionState(state or SessionState.ALL)
    except ValueError:
        chosen = SessionState.ALL
    return SessionFilter(query=(query or "").strip(), state=chosen)


def search_text(snapshot: SessionSnapshot) -> str:
    """What the text query is matched against: title, id, folder and model, lower-cased."""
    fields = (snapshot.title, snapshot.session_id, snapshot.cwd, snapshot.model)
    return " ".join(field for field in fields if field).lower()


def session_matches(snapshot: SessionSnapshot, session_filter: SessionFilter) -> bool:
    state = session_filter.state
    if state is SessionState.LIVE and not snapshot.live:
        return False
    if state is SessionState.IDLE and snapshot.live:
        return False
    text = search_text(snapshot)
    return all(term in text for term in session_filter.terms)


def hidden_sessions(
    snapshots: Iterable[SessionSnapshot], session_filter: SessionFilter
) -> frozenset[str]:
    """The ids of the sessions the filter hides."""
    return frozenset(s.session_id for s in snapshots if not session_matches(s, session_filter))
