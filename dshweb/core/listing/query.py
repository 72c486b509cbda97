"""The sessions list's query: which sessions it shows, in which order, which page.

Pure, no Django. The rule exists once, here and in :mod:`.pages`: the page, its htmx
requests and its socket all ask the server, which filters, sorts and pages.

A query is read leniently from the page's ``?q=…&home=…&state=…&band=…&sort=…&page=…``
(and ``per_page``): a missing, unknown or malformed value is its default, never an error.
The text query is lower-cased and split on whitespace; a session matches when every
term occurs in its search text (title, id, folder, model and home's name, lower-cased),
it belongs to the home chosen, if one is (by name, exactly), its state (live or idle) is
the one chosen, and its band is the one chosen, if one is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TypeVar
from urllib.parse import urlencode

from dshweb.core.fold.gauge import Band
from dshweb.core.fold.session import SessionSnapshot

PER_PAGE = 50
MAX_PER_PAGE = 100
"""A page's rows bound what one page or socket message carries, whatever the home's size."""
MAX_PAGE = 1_000_000
MAX_QUERY = 200
"""Characters of the text query kept (a longer one is cut)."""
MAX_HOME = 64
"""Characters of a home's name kept in a query (no home's name is longer)."""

E = TypeVar("E", bound=StrEnum)


class SessionState(StrEnum):
    ALL = "all"
    LIVE = "live"
    IDLE = "idle"


class SortKey(StrEnum):
    ACTIVITY = "activity"
    """Newest activity first, sub-agents under their parent (the tree)."""
    PERCENT = "percent"
    """Fullest context first; flat."""
    HEADROOM = "headroom"
    """Least room before the compaction point first (past it first of all); flat."""
    NEXT_PASS = "fold"
    """Closest to its next automatic fold first (its forecast's expected steps); flat.
    Sessions with no forecast, or not running (a fold waits for DSH), come last."""
    COST = "cost"
    """Dearest first (its priced requests and summaries so far); flat. Sessions on models
    without a price come last."""


@dataclass(frozen=True, slots=True)
class ListQuery:
    q: str = ""
    state: SessionState = SessionState.ALL
    band: Band | None = None
    sort: SortKey = SortKey.ACTIVITY
    page: int = 1
    per_page: int = PER_PAGE
    home: str = ""
    """Only the sessions of the home of this name (empty: every home)."""
    folder: str = ""
    """Only the sessions DSH ran in this folder or inside it (empty: any folder)."""

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(self.q.lower().split())

    @property
    def filtering(self) -> bool:
        """Whether the query leaves any session out."""
        return (
            bool(self.terms)
            or bool(self.home)
            or bool(self.folder)
            or self.state is not SessionState.ALL
            or self.band is not None
        )

    def params(self) -> dict[str, str]:
        """The values that differ from the defaults, as the address shows them."""
        values = {
            "q": self.q,
            "home": self.home,
            "folder": self.folder,
            "state": "" if self.state is SessionState.ALL else self.state.value,
            "band": "" if self.band is None else self.band.value,
            "sort": "" if self.sort is SortKey.ACTIVITY else self.sort.value,
            "page": "" if self.page == 1 else str(self.page),
            "per_page": "" if self.per_page == PER_PAGE else str(self.per_page),
        }
        return {name: value for name, value in values.items() if value}

    def query_string(self) -> str:
        """``q=…&page=2`` (only what differs from the defaults; empty for none)."""
        return urlencode(self.params())

    def on_page(self, page: int) -> ListQuery:
        return replace(self, page=page)


def list_query(params: Mapping[str, str]) -> ListQuery:
    """The query from the page's GET parameters (or the socket's query string)."""
    return ListQuery(
        q=(params.get("q") or "")[:MAX_QUERY].strip(),
        state=_choice(SessionState, params.get("state")) or SessionState.ALL,
        band=_choice(Band, params.get("band")),
        sort=_choice(SortKey, params.get("sort")) or SortKey.ACTIVITY,
        page=_number(params.get("page"), 1, MAX_PAGE),
        per_page=_number(params.get("per_page"), PER_PAGE, MAX_PER_PAGE),
        home=(params.get("home") or "")[:MAX_HOME].strip(),
        folder=(params.get("folder") or "")[:MAX_QUERY].strip(),
    )


def _choice(kind: type[E], value: str | None) -> E | None:
    try:
        return kind(value) if value else None
    except ValueError:
        return None


def _number(value: str | None, default: int, highest: int) -> int:
    """A positive whole number of at most ``highest``; anything else is ``default``."""
    text = (value or "").strip()
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        return default
    number = int(text)
    return min(number, highest) if number >= 1 else default


def search_text(snapshot: SessionSnapshot, home: str = "") -> str:
    """What the text query is matched against: title, id, folder, model and the name of
    the session's home, lower-cased."""
    fields = (snapshot.title, snapshot.session_id, snapshot.cwd, snapshot.model, home)
    return " ".join(field for field in fields if field).lower()


def matches(
    query: ListQuery,
    terms: tuple[str, ...],
    *,
    home: str,
    band: Band,
    text: str,
    snapshot: SessionSnapshot,
) -> bool:
    """Whether ``query`` shows ``snapshot``, a session of ``home`` in ``band`` whose
    :func:`search_text` is ``text``; ``terms`` is ``query.terms`` (a list pages thousands
    of sessions with one query: it splits the text once)."""
    if query.home and home != query.home:
        return False
    if query.folder and not snapshot.works_in(query.folder):
        return False
    state = query.state
    if state is not SessionState.ALL and snapshot.live != (state is SessionState.LIVE):
        return False
    if query.band is not None and band is not query.band:
        return False
    return all(term in text for term in terms)
