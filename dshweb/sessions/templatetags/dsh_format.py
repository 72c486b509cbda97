"""Template filters that show DSH numbers the way DSH's own ring does.

Thin wrappers over :mod:`dshweb.sessions.display`; every filter shows an unknown value
(``None``, or ``""`` for a key the projection does not have yet) as an em dash instead
of failing. A ledger's chart, newest page and refused commands are laid out here too, for
the templates that show a session's ledger.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from dshweb.core.fold.forecast import Forecast
from dshweb.core.fold.gauge import context_percent
from dshweb.core.fold.ledger import Ledger
from dshweb.core.fold.session import SessionSnapshot
from dshweb.sessions.display import figures
from dshweb.sessions.display.ledger_pages import (
    LedgerPage,
    NumberedFold,
    RefusedTail,
    ledger_page,
)
from dshweb.sessions.display.ledger_pages import refused_tail as newest_refused
from dshweb.sessions.display.timeline import FoldMarker, TimelineChart, timeline_chart

register = template.Library()

UNKNOWN = "—"


@register.filter
def tokens(value: int | str | None) -> str:
    """``1234`` → ``1.2K``."""
    return UNKNOWN if value is None or value == "" else figures.format_page_tokens(int(value))


@register.filter
def exact(value: int | str | None) -> str:
    """``1234567`` → ``1,234,567`` (the full figure beside a compact one)."""
    return UNKNOWN if value is None or value == "" else f"{int(value):,}"


@register.filter
def percent(used: int | None, window: int | None) -> str:
    """``{{ used|percent:window }}``: the ring's whole percent, without the sign."""
    value = context_percent(used, window)
    return "" if value is None else str(value)


@register.filter
def ratio(value: float | None) -> str:
    """``0.8734`` → ``87.3%``."""
    return figures.format_ratio(value)


@register.filter
def epoch_ms(value: int | None) -> datetime | None:
    """DSH event time (epoch milliseconds) → an aware UTC datetime for ``|date``; a time
    no calendar can show (a log can hold any number) is shown as unknown."""
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


@register.filter
def dom_id(value: str, prefix: str = "session") -> str:
    """A stable, unique element id for a session id (any characters)."""
    return figures.dom_id(prefix, value)


@register.filter
def key_dom_id(key: tuple[str, str], prefix: str = "session") -> str:
    """A stable, unique element id for a session among every home's: ``key`` is its
    (home, session id); a home's name holds no ``/``."""
    home, session_id = key
    return figures.dom_id(prefix, f"{home}/{session_id}")


@register.filter
def arc(value: float | None) -> str:
    """A percent of the ring as a locale-free SVG number (``12.345``)."""
    return "0" if value is None else f"{value:.3f}"


@register.filter
def get_item(mapping: dict[str, object] | None, key: str) -> object:
    """``{{ mapping|get_item:key }}``: a dict value by a key held in a variable."""
    return None if mapping is None else mapping.get(key)


@register.filter
def share(part: float | None, whole: float | None) -> float | None:
    """``part`` as a percent of ``whole`` (capped at 100), for ring arcs."""
    if part is None or not whole:
        return None
    return min(100.0, max(0.0, float(part) / float(whole) * 100))


@register.filter
def diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line) pairs: ``add``, ``del``, ``hunk`` or ``same``."""
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return [
        ("hunk" if line.startswith(("+++", "---")) else kinds.get(line[:1], "same"), line)
        for line in diff.splitlines()
    ]


@register.filter
def chart(ledger: Ledger) -> TimelineChart | None:
    """``{{ ledger|chart }}``: its pressure timeline as SVG geometry (none without a point)."""
    return timeline_chart(ledger) if ledger.points else None


@register.filter
def fold_markers(chart: TimelineChart) -> SafeString:
    """``{{ chart|fold_markers }}``: the chart's fold markers as SVG, made here rather than
    by a template loop (up to 80 markers of a dozen tags each were most of a session
    update's render)."""
    return mark_safe("".join(_marker_svg(chart, m) for m in chart.markers))


def _marker_svg(chart: TimelineChart, m: FoldMarker) -> str:
    kind, status = escape(m.kind), escape(m.status)
    x, top, bottom = arc(m.x), arc(chart.top), arc(chart.bottom)
    parts = [
        f'<g class="timeline-fold fold-{kind} is-{status}" data-kind="{kind}" '
        f'data-seq="{m.seq}" data-first="{m.first}" data-last="{m.last}" data-count="{m.count}">'
    ]
    failed = " (failed)" if m.status == "failed" else ""
    if m.count == 1:
        parts.append(
            f"<title>#{m.number} {kind} fold at seq {m.seq}{failed}: "
            f"{exact(m.before)} → {exact(m.after)} tokens</title>"
        )
    else:
        kinds = ", ".join(f"{n} {escape(k)}" for k, n in m.kinds)
        also = f" ({m.failed} failed)" if m.failed else ""
        parts.append(
            f"<title>{m.count} folds, #{m.first}–#{m.last}, at seq {m.seq}–{m.end_seq}: "
            f"{kinds}{also}; highest before {exact(m.before)}, lowest after "
            f"{exact(m.after)} tokens</title>"
            f'<rect class="fold-span" x="{arc(m.x_start)}" y="{top}" width="{arc(m.width)}" '
            f'height="{arc(chart.plot_height)}"></rect>'
        )
    parts.append(f'<line class="fold-guide" x1="{x}" x2="{x}" y1="{top}" y2="{bottom}"></line>')
    before, after = m.y_before, m.y_after
    if before is not None and after is not None:
        parts.append(
            f'<line class="fold-drop" x1="{x}" x2="{x}" y1="{arc(before)}" y2="{arc(after)}">'
            "</line>"
        )
    if before is not None:
        parts.append(f'<circle class="fold-before" cx="{x}" cy="{arc(before)}" r="3.5"></circle>')
    if after is not None:
        parts.append(f'<circle class="fold-after" cx="{x}" cy="{arc(after)}" r="3.5"></circle>')
    if m.labelled:
        label = m.number if m.count == 1 else f"×{m.count}"
        parts.append(f'<text class="fold-number" x="{x}" y="{top}" dy="-7">{label}</text>')
    parts.append("</g>")
    return "".join(parts)


@register.filter
def forecast_text(forecast: Forecast) -> str:
    """``{{ forecast|forecast_text }}``: the fold forecast in words."""
    return figures.forecast_text(forecast)


@register.filter
def forecast_now(snapshot: SessionSnapshot) -> Forecast:
    """``{{ snapshot|forecast_now }}``: its fold forecast as of now (a list row is
    rendered again every minute: an idle session's forecast goes within one)."""
    return snapshot.forecast(now_ms=int(time.time() * 1000))


@register.filter
def fold_in(forecast: Forecast) -> str:
    """``{{ forecast|fold_in }}``: ``fold in ~6 steps`` / ``fold at the next step`` /
    ``no fold forecast`` (the list's short form)."""
    return figures.fold_in(forecast)


@register.filter
def ledger_row(row: NumberedFold) -> SafeString:
    """``{{ row|ledger_row }}``: one fold's row of a ledger table (rendered once per fold
    state: a ledger card is rendered again at each new fold)."""
    from dshweb.sessions.fragments import ledger_row_html

    return mark_safe(ledger_row_html(row))  # our row template's output


@register.filter
def newest_page(ledger: Ledger) -> LedgerPage:
    """``{{ ledger|newest_page }}``: its newest folds, a page of them."""
    return ledger_page(ledger.folds, first=ledger.first)


@register.filter
def refused_tail(ledger: Ledger) -> RefusedTail:
    """``{{ ledger|refused_tail }}``: its newest refused commands, and how many more."""
    return newest_refused(ledger.refused, earlier=ledger.refused_earlier)
