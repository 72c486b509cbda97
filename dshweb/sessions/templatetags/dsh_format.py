"""Template filters that show DSH numbers the way DSH's own ring does.

They only format (the geometry, the SVG, the forecast and the ledger's pages are made by
:mod:`dshweb.sessions.display` and :mod:`dshweb.sessions.fragments`); every filter shows
an unknown value (``None``, or ``""`` for a key the projection does not have yet) as an
em dash instead of failing.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django import template

from dshweb.core.fold.forecast import Forecast
from dshweb.core.fold.gauge import context_percent
from dshweb.core.spans import span_text
from dshweb.sessions.display import figures

register = template.Library()

UNKNOWN = figures.UNKNOWN


@register.filter
def tokens(value: int | str | None) -> str:
    """``1234`` → ``1.2K``."""
    return UNKNOWN if value is None or value == "" else figures.format_page_tokens(int(value))


@register.filter
def exact(value: int | str | None) -> str:
    """``1234567`` → ``1,234,567`` (the full figure beside a compact one)."""
    return figures.format_exact(value)


@register.filter
def through(low: object, high: object) -> str:
    """``{{ low|through:high }}``: two figures as shown (``|exact``, ``|tokens``) as one
    span, ``4–9``, or one figure when they read the same (:mod:`dshweb.core.spans`)."""
    return span_text(str(low), str(high))


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
def usd(value: float | None) -> str:
    """``0.0634`` → ``$0.0634`` (:func:`~dshweb.sessions.display.figures.format_usd`)."""
    return figures.format_usd(value)


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
    return figures.svg_number(value)


@register.filter
def forecast_text(forecast: Forecast) -> str:
    """``{{ forecast|forecast_text }}``: the fold forecast in words."""
    return figures.forecast_text(forecast)


@register.filter
def summary_text(forecast: Forecast) -> str:
    """``{{ summary|summary_text }}``: the next summary's forecast in words."""
    return figures.forecast_text(forecast, summary=True)


@register.filter
def pass_in(forecast: Forecast) -> str:
    """``{{ forecast|fold_in }}``: ``fold in ~6 steps`` / ``fold at the next step`` /
    ``no fold forecast`` (the list's short form)."""
    return figures.pass_in(forecast)
