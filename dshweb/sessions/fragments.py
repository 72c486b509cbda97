"""The HTML fragments a page is made of, rendered the same way for a first page load
and for every live update over the socket (each fragment's top element has a stable id).

A socket message stays under :data:`MESSAGE_MAX` bytes whatever the home's size: the
sessions list sends one page of rows at most, and a page too big for one message goes
as its frame (counts, pager, no rows) followed by its rows a few at a time.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.template import Context
from django.template.loader import get_template, render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language

from dshweb.compaction.status import latest_record
from dshweb.config import get_config
from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.forecast import Forecast
from dshweb.core.fold.gauge import ContextGauge, window_share
from dshweb.core.fold.ledger import Ledger
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.fold.told import told_gap
from dshweb.core.listing.pages import ListPage
from dshweb.core.listing.query import ListQuery
from dshweb.core.listing.tree import SessionEntry
from dshweb.core.lru import LRU
from dshweb.live.hub import SessionView
from dshweb.live.service import demo_replays
from dshweb.sessions.display.compact_status import CompactView, compact_view
from dshweb.sessions.display.costs import cost_view, list_cost
from dshweb.sessions.display.figures import cache_hit_ratio, dom_id
from dshweb.sessions.display.ledger_pages import (
    LEDGER_PAGE_SIZE,
    LedgerPage,
    NumberedCompaction,
    RefusedTail,
    ledger_page,
    refused_tail,
)
from dshweb.sessions.display.news import Heard, News, news
from dshweb.sessions.display.ring import breakdown_parts, ring_arcs
from dshweb.sessions.display.timeline import TimelineChart, timeline_chart

ROW_TEMPLATE = "dashboard/_session_row.html"
LIST_PAGE_TEMPLATE = "dashboard/_session_page.html"
LIST_COUNTS_TEMPLATE = "dashboard/_session_counts.html"
COMPACT_TEMPLATE = "dashboard/_compact_status.html"


def _render(name: str, context: dict[str, Any]) -> str:
    """Template ``name`` with ``context``, not localized: every figure is formatted by our
    own filters, and Django's localization of each value (a language lookup per value)
    was a fifth of a session's render."""
    template = get_template(name).template  # type: ignore[attr-defined]
    return str(template.render(Context(context, use_l10n=False)))


def session_context(
    home: str,
    snapshot: SessionSnapshot,
    gauge: ContextGauge,
    forecast: Forecast | None = None,
    summary: Forecast | None = None,
) -> dict[str, Any]:
    if forecast is None:
        forecast = session_forecast(snapshot)
    if summary is None:
        summary = summary_forecast(snapshot)
    return {
        "home_name": home,
        "session": snapshot,
        "gauge": gauge,
        "forecast": forecast,
        "summary_forecast": summary,
        "ring": ring_arcs(gauge, snapshot.context_breakdown, forecast),
        "breakdown": breakdown_parts(snapshot.context_breakdown),
        "cache_hit": cache_hit_ratio(snapshot.token_usage),
        "cost": cost_view(snapshot, get_config().rate_book),
        "told_gap": told_gap(snapshot.told, gauge.band, snapshot.threshold),
        # Made when the part that shows it is rendered (a template calls a callable):
        # the ledger card is rendered again only when its folds change.
        "timeline_chart": partial(chart_of, snapshot.ledger),
        "ledger_view": partial(ledger_view, snapshot.ledger),
    }


def chart_of(ledger: Ledger) -> TimelineChart | None:
    """The session's pressure timeline, drawn (none before a first reading)."""
    return timeline_chart(ledger) if ledger.points else None


@dataclass(frozen=True, slots=True)
class LedgerView:
    """What a ledger card shows: one page of folds, their rows rendered, and the newest
    refused commands."""

    page: LedgerPage
    rows_html: SafeString
    refused: RefusedTail
    has_outcomes: bool
    """Some fold of the page was asked for or has more to say (a command, an overflow, an
    error, still running): the table has that column only then."""


def has_outcome(compaction: Compaction) -> bool:
    return bool(compaction.command) or compaction.kind == "overflow" or compaction.status != "done"


def ledger_view(ledger: Ledger, before: int | None = None) -> LedgerView:
    """The ledger's folds numbered below ``before`` (the newest page without it)."""
    page = ledger_page(ledger.compactions, before=before, first=ledger.first)
    outcomes = any(has_outcome(row.compaction) for row in page.rows)
    book = get_config().rate_book
    rows = mark_safe("".join(ledger_row_html(row, outcomes, book) for row in page.rows))  # ours
    tail = refused_tail(ledger.refused, earlier=ledger.refused_earlier)
    return LedgerView(page, rows, tail, outcomes)


def session_forecast(snapshot: SessionSnapshot) -> Forecast:
    """The session's next pass forecast as of now (an idle one has none)."""
    return snapshot.forecast(now_ms=int(time.time() * 1000))


def summary_forecast(snapshot: SessionSnapshot) -> Forecast:
    """The session's next summary forecast as of now (an idle one has none)."""
    return snapshot.summary_forecast(now_ms=int(time.time() * 1000))


def compact_status(home: str, snapshot: SessionSnapshot, *, fresh: bool = False) -> CompactView:
    """The Compact button's status for this session: its latest request (as kept, or read
    from the database when ``fresh``) and the log."""
    record = latest_record(home, snapshot.session_id, fresh=fresh)
    return compact_view(record, snapshot.ledger)


def compact_status_html(home: str, snapshot: SessionSnapshot) -> str:
    return render_to_string(COMPACT_TEMPLATE, {"compact": compact_status(home, snapshot)})


ROWS_KEPT = 2048
"""List rows kept rendered: a page pushed again renders only the rows that changed. One
per session and place (the newest rendering: an older snapshot is not kept alive)."""
RowKey = tuple[str, str, int, bool, bool, str]
"""A list row's home, session, depth, orphan, ``many`` homes and language."""
_rows: LRU[RowKey, tuple[SessionSnapshot, int, str]] = LRU(ROWS_KEPT)


def row_context(entry: SessionEntry, many: bool) -> dict[str, Any]:
    return {
        "entry": entry,
        "many_homes": many,
        # as of now: a row is rendered again every minute, so an idle session's forecast
        # goes within one
        "forecast": entry.snapshot.forecast(now_ms=int(time.time() * 1000)),
        "threshold_at": window_share(entry.gauge.threshold, entry.gauge.window),
        "cost": list_cost(entry.snapshot, get_config().rate_book),
    }


def row_html(entry: SessionEntry, many: bool) -> str:
    """One list row, rendered once per snapshot, place in the tree, whether the list
    names each row's home (``many`` homes) and minute (its "… ago" moves on by the
    minute)."""
    shot = entry.snapshot
    key = (entry.home, shot.session_id, entry.depth, entry.orphan, many, get_language())
    minute = int(time.time() // 60)

    def render() -> tuple[SessionSnapshot, int, str]:
        html = _compact_whitespace(_render(ROW_TEMPLATE, row_context(entry, many)))
        return shot, minute, html

    # the snapshot itself (never a reused id) in the same minute
    kept = _rows.get_or_make(key, render, lambda kept: kept[0] is shot and kept[1] == minute)
    return kept[2]


LEDGER_ROW_TEMPLATE = "dashboard/_ledger_row.html"
RENDERED_KEPT = 64
"""Sessions whose live parts are kept rendered: a page view or a socket of a session
renders them once per version, whoever asks."""
STEADY_KEPT = 2 * RENDERED_KEPT
"""Parts that show a small part of the snapshot (:data:`LIVE_PARTS`: the ledger card, the
largest nodes) kept rendered: both of each session whose live parts are kept."""
LEDGER_ROWS_KEPT = LEDGER_PAGE_SIZE * RENDERED_KEPT
"""Ledger rows kept rendered: a fold's row is the same until the fold changes, and a
session's ledger card is rendered again at every fold of it. Enough for the newest page
of each session whose live parts are kept."""
_ledger_rows: LRU[tuple[NumberedCompaction, bool, RateBook, str], str] = LRU(LEDGER_ROWS_KEPT)


def ledger_row_html(row: NumberedCompaction, outcomes: bool, book: RateBook) -> str:
    """One compaction's row of a ledger table (with its outcome cell when the table has
    that column; costed by ``book``), rendered once per compaction state (and number) and
    language."""

    def render() -> str:
        context = {
            "row": row,
            "compaction": row.compaction,
            "outcomes": outcomes,
            "costed": row.compaction.costed(book),
        }
        return _render(LEDGER_ROW_TEMPLATE, context)

    return _ledger_rows.get_or_make((row, outcomes, book, get_language()), render)


_LINE_BREAKS = re.compile(r"\n\s*")


def _compact_whitespace(html: str) -> str:
    """``html`` with each run of white space that holds a line break (a template's
    indentation and blank lines) as one line break: the same page (a row holds no
    ``<pre>``), and a page of 100 rows stays well inside one socket message."""
    return _LINE_BREAKS.sub("\n", html).strip()


def rows_html(entries: list[SessionEntry], many: bool) -> str:
    """One list row per entry (a new row's id is not on the page yet: the page adds it)."""
    return "".join(row_html(entry, many) for entry in entries)


MESSAGE_MAX = 200 * 1024
"""Bytes of HTML in one socket message, at most (Daphne refuses past 1 MiB; we promise
256 KB): a list page of 100 rows is about half of it."""
ROWS_ID = "session-rows"


def list_url(query: ListQuery) -> str:
    """The sessions list's address for ``query`` (only what differs from the defaults)."""
    params = query.query_string()
    return reverse("dashboard:session-list") + (f"?{params}" if params else "")


def list_socket_url(query: ListQuery) -> str:
    """The list socket's path for ``query``: the socket pushes only that page."""
    params = query.query_string()
    return "/ws/sessions/" + (f"?{params}" if params else "")


def list_context(page: ListPage) -> dict[str, Any]:
    many = many_homes(page)
    rows = mark_safe(rows_html(list(page.rows), many))  # rendered by our row template
    return {
        "page": page,
        "query": page.query,
        "rows": page.rows,
        "rows_html": rows,
        "many_homes": many,
    }


def many_homes(page: ListPage) -> bool:
    """Whether the list shows sessions of more than one home (each row names its home)."""
    return len(page.counts.homes) > 1


def list_page_messages(page: ListPage) -> list[str]:
    """The whole page for the socket: counts, rows, notes and pager, each by its id."""
    context = list_context(page)
    html = render_to_string(LIST_PAGE_TEMPLATE, context)
    if _size(html) <= MESSAGE_MAX:
        return [html]
    frame = render_to_string(LIST_PAGE_TEMPLATE, {**context, "rows": (), "rows_html": ""})
    rows = [row_html(entry, context["many_homes"]) for entry in page.rows]
    return [frame, *_packed(rows, f'<ol id="{ROWS_ID}" hx-swap-oob="beforeend">', "</ol>")]


def list_update_messages(rows: list[SessionEntry], page: ListPage, counts: bool) -> list[str]:
    """Rows of ``page``, whose layout is unchanged, each replacing its own row by id, and
    the page's counts when they changed (``counts``)."""
    many = many_homes(page)
    parts = [row_html(entry, many) for entry in rows]
    if counts:
        parts.append(render_to_string(LIST_COUNTS_TEMPLATE, list_context(page)))
    return _packed(parts)


def _packed(parts: Sequence[str], head: str = "", tail: str = "") -> list[str]:
    """``parts`` joined into as few messages as keep under :data:`MESSAGE_MAX`, each
    wrapped in ``head`` … ``tail``."""
    messages: list[str] = []
    bundle: list[str] = []
    size = budget = MESSAGE_MAX - _size(head) - _size(tail)
    for part in parts:
        length = _size(part)
        if bundle and length > size:
            messages.append(head + "".join(bundle) + tail)
            bundle, size = [], budget
        bundle.append(part)
        size -= length
    if bundle:
        messages.append(head + "".join(bundle) + tail)
    return messages


def _size(html: str) -> int:
    return len(html.encode("utf-8", "surrogatepass"))


LIVE_PARTS: tuple[tuple[str, Callable[[SessionSnapshot], object] | None], ...] = (
    ("dashboard/_session_header.html", None),
    ("dashboard/_context_ring.html", None),
    ("dashboard/_context_pressure.html", None),
    ("dashboard/_breakdown.html", None),
    ("dashboard/_compaction_preview.html", None),
    ("dashboard/_token_usage.html", None),
    ("dashboard/_compaction_point.html", None),
    ("dashboard/_cost.html", None),
    ("dashboard/_told.html", None),
    ("dashboard/_timeline.html", None),
    ("dashboard/_ledger.html", lambda shot: (shot.ledger.compactions, shot.ledger.refused)),
    ("dashboard/_largest_nodes.html", lambda shot: shot.largest_nodes),
    ("dashboard/_session_facts.html", None),
    ("dashboard/_session_errors.html", None),
)
"""The session page's live parts, in page order, each with what it shows when that is a
small part of the snapshot (the ledger, the largest nodes: they move far less often than
the session grows); such a part is rendered again only when that changed."""

PartsKey = tuple[str, str, int, Forecast, Forecast, str, RateBook]
"""A session's home, id and version, its forecasts, the language and the rates."""
_rendered: LRU[PartsKey, tuple[str, ...]] = LRU(RENDERED_KEPT)
_steady: LRU[tuple[str, str, str, str, RateBook], tuple[object, str]] = LRU(STEADY_KEPT)


def live_parts(home: str, view: SessionView) -> tuple[str, ...]:
    """The session page's live parts (:data:`LIVE_PARTS`) for a session of ``home``, each
    on its own, rendered once per version and language."""
    shot = view.snapshot
    forecast = session_forecast(shot)  # moves with the clock too: idle after a while
    summary = summary_forecast(shot)
    language, book = get_language(), get_config().rate_book
    key = (home, shot.session_id, view.version, forecast, summary, language, book)

    def render() -> tuple[str, ...]:
        context = session_context(home, shot, view.gauge, forecast, summary)
        return tuple(_part_html(home, shot, name, shows, context) for name, shows in LIVE_PARTS)

    return _rendered.get_or_make(key, render)


def live_parts_html(home: str, view: SessionView) -> str:
    """The live parts as one piece of HTML (a page load)."""
    return "".join(live_parts(home, view))


LEAD_PARTS = {
    "dashboard/_session_header.html": "header",
    "dashboard/_context_ring.html": "ring",
    "dashboard/_context_pressure.html": "pressure",
    "dashboard/_breakdown.html": "breakdown",
    "dashboard/_compaction_preview.html": "preview",
}
"""The live parts the page leads with, each by the name its template places it by
(dashboard/_session.html): the title; the ring with what fills the context beside the
Compact card and what the next fold would take away, in one screen of a desktop."""


def page_parts(home: str, view: SessionView) -> dict[str, SafeString]:
    """The live parts of a page load (our own HTML): those of :data:`LEAD_PARTS` by name,
    and the others together as ``rest``, in page order."""
    parts: dict[str, SafeString] = {}
    rest: list[str] = []
    for (name, _), html in zip(LIVE_PARTS, live_parts(home, view), strict=True):
        if name in LEAD_PARTS:
            parts[LEAD_PARTS[name]] = mark_safe(html)
        else:
            rest.append(html)
    parts["rest"] = mark_safe("".join(rest))
    return parts


def _part_html(
    home: str,
    shot: SessionSnapshot,
    name: str,
    shows: Callable[[SessionSnapshot], object] | None,
    context: dict[str, Any],
) -> str:
    if shows is None:
        return _render(name, context)
    # (with the rates: the ledger's rows cost their compactions)
    key = (home, shot.session_id, name, get_language(), get_config().rate_book)
    value = shows(shot)
    kept = _steady.get_or_make(
        key, lambda: (value, _render(name, context)), lambda kept: kept[0] == value
    )
    return kept[1]


def session_view_parts(home: str, view: SessionView) -> tuple[str, ...]:
    """What a session's socket sends, part by part: its live parts, and the Compact
    status (which sits in a card of the page that is not pushed, beside the per-user
    button). Each part replaces its element by id, so a socket sends only those that
    changed since its last message."""
    return (*live_parts(home, view), compact_status_html(home, view.snapshot))


def session_gone_html() -> str:
    return render_to_string("dashboard/_live_status.html", {"gone": True})


NEWS_TEMPLATE = "dashboard/_news.html"


def session_news(home: str, heard: Heard | None, view: SessionView) -> tuple[Heard, str]:
    """What a session's page is to hear after ``heard``: the words of its
    ``#announcements`` and, for a fold, the note on its ring (HTML put in place by id; empty
    when nothing changed); and what it will then have heard."""
    shot, gauge = view.snapshot, view.gauge
    replayed = demo_replays(home, shot.session_id)
    said = news(heard, shot.ledger, gauge, shot.last_seq, replayed=replayed)
    now = Heard.of(shot.ledger, gauge, shot.last_seq)
    if said is None:
        return now, ""
    notes = [("fold-note", said.compaction, said.sentence)] if said.compaction is not None else []
    return now, _news_html(said.sentence, notes)


def rows_news(heard: dict[tuple[str, str], Heard], rows: Sequence[SessionEntry]) -> str:
    """What a list page is to hear of its ``rows`` (``heard`` is updated): a note in the
    row of each that folded, and the words of its ``#announcements``, each session named
    by its title (three at most: a page of folding sessions is not read out whole)."""
    sentences: list[str] = []
    notes: list[tuple[str, Compaction, str]] = []
    for entry in rows:
        shot = entry.snapshot
        said: News | None = news(
            heard.get(entry.key),
            shot.ledger,
            entry.gauge,
            shot.last_seq,
            replayed=demo_replays(entry.home, shot.session_id),
        )
        heard[entry.key] = Heard.of(shot.ledger, entry.gauge, shot.last_seq)
        if said is None:
            continue
        sentences.append(f"{shot.title or shot.session_id}: {said.sentence}")
        if said.compaction is not None:
            note_id = dom_id("fold-note", f"{entry.home}/{shot.session_id}")
            notes.append((note_id, said.compaction, said.sentence))
    return _news_html("; ".join(sentences[:3]), notes) if sentences else ""


def _news_html(sentence: str, notes: list[tuple[str, Compaction, str]]) -> str:
    """The live region's next words, and each note (its id, its fold, its words)."""
    return render_to_string(NEWS_TEMPLATE, {"sentence": sentence, "notes": notes})


def alert_toast_html(event: dict[str, Any]) -> str:
    """An alert's notice (the ``alert.fired`` message of :mod:`dshweb.alerts.deliveries`),
    put first in the page's ``#alert-toasts``."""
    return _render("dashboard/_alert_toast.html", {"headline": event["headline"]} | event["alert"])
