"""Figures as the pages show them: compact token counts, ratios, and element ids.

Rounding is half-up like DSH's own ring (:func:`~dshweb.core.fold.gauge.round_half_up`),
never Python's round-half-to-even.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from dshweb import words
from dshweb.core.fold.cost import usd_text
from dshweb.core.fold.forecast import Forecast
from dshweb.core.fold.gauge import round_half_up
from dshweb.core.fold.meter import cache_and_prompt
from dshweb.core.spans import span_text


def format_page_tokens(count: int) -> str:
    """``999``, ``1.2K``, ``678K``, ``1.0M``: the ring's compact token figure, as the pages
    show it (not the occupancy line's, which copies the plugin's text:
    :func:`dshweb.core.fold.line_tokens.format_line_tokens`).

    Below 10K one decimal of K, below 1M whole K, above that one decimal of M. A value
    that rounds up to the next unit's size is shown in that unit (``9_999`` is ``10K``,
    ``999_999`` is ``1.0M``), so no figure reads ``10.0K`` or ``1000K``.
    """
    if count < 0:
        return "-" + format_page_tokens(-count)
    if count < 1000:
        return str(count)
    # count / 10ⁿ is exactly k + 0.5 at a halfway count (any count far below 2⁵²).
    tenths_k = round_half_up(count / 100)
    if tenths_k < 100:
        return f"{tenths_k // 10}.{tenths_k % 10}K"
    whole_k = round_half_up(count / 1000)
    if whole_k < 1000:
        return f"{whole_k}K"
    tenths_m = round_half_up(count / 100_000)
    return f"{tenths_m // 10}.{tenths_m % 10}M"


UNKNOWN = "—"


def format_exact(value: int | str | None) -> str:
    """``1234567`` → ``1,234,567`` (the full figure beside a compact one); unknown (``None``,
    or ``""`` for a key a projection does not have yet) as an em dash."""
    return UNKNOWN if value is None or value == "" else f"{int(value):,}"


def format_usd(value: float | None) -> str:
    """Dollars as a person reads a bill (:func:`~dshweb.core.fold.cost.usd_text`); ``—``
    when unknown (a model without a price is never shown as $0)."""
    return UNKNOWN if value is None else usd_text(value)


def svg_number(value: float | None) -> str:
    """A locale-free SVG number (``12.345``); nothing known is ``0``."""
    return "0" if value is None else f"{value:.3f}"


def cache_hit_ratio(token_usage: Mapping[str, int]) -> float | None:
    """``cacheRead / (uncachedInput + cacheRead + cacheWrite)``; ``None`` before any input."""
    read, total = cache_and_prompt(token_usage)
    return read / total if total > 0 else None


def format_ratio(ratio: float | None) -> str:
    """``0.8734`` → ``87.3%`` (half-up to one decimal); ``—`` when unknown."""
    if ratio is None:
        return "—"
    tenths = round_half_up(ratio * 1000)
    return f"{tenths // 10}.{tenths % 10}%"


def dom_id(prefix: str, key: str) -> str:
    """A stable, unique HTML id for ``key``: ``[A-Za-z0-9-]`` kept, the rest ``_hex_``."""
    escaped = "".join(
        ch if (ch.isascii() and ch.isalnum()) or ch == "-" else f"_{ord(ch):x}_" for ch in key
    )
    return f"{prefix}-{escaped}"


def forecast_text(forecast: Forecast, *, summary: bool = False) -> str:
    """``Fold in about 6 steps (4–9), about 3 min`` / ``Fold in 6 or more steps`` (a
    range open above) / ``Fold due at the next step`` / ``No fold forecast: too few
    steps``, in the active language; with ``summary``, the same of the next summary."""
    steps, low, high = forecast.steps, forecast.steps_low, forecast.steps_high
    if steps is None or low is None:
        reason = words.named(words.NO_FORECAST, forecast.reason or "unknown")
        if summary:
            return _("No summary forecast: %(reason)s") % {"reason": reason}
        return _("No fold forecast: %(reason)s") % {"reason": reason}
    if high == 1:
        return _("Summary due at the next step") if summary else _("Fold due at the next step")
    if high is None:
        text = (
            ngettext("Summary in %(steps)d or more step", "Summary in %(steps)d or more steps", low)
            if summary
            else ngettext("Fold in %(steps)d or more step", "Fold in %(steps)d or more steps", low)
        ) % {"steps": low}
        return text + _minutes_text(forecast.minutes)
    shown = steps
    text = (
        ngettext("Summary in about %(steps)d step", "Summary in about %(steps)d steps", shown)
        if summary
        else ngettext("Fold in about %(steps)d step", "Fold in about %(steps)d steps", shown)
    ) % {"steps": shown}
    if (low, high) != (shown, shown):
        text += f" ({span_text(str(low), str(high))})"
    return text + _minutes_text(forecast.minutes)


def _minutes_text(minutes: float | None) -> str:
    if minutes is None:
        return ""
    if minutes < 1:
        return _(", under a minute")
    return _(", about %(duration)s") % {"duration": _duration(minutes)}


def _duration(minutes: float) -> str:
    if minutes < 90:
        return _("%(minutes)d min") % {"minutes": round(minutes)}
    hours = minutes / 60
    if hours < 48:
        return _("%(hours).1f h") % {"hours": hours}
    return _("%(days).1f days") % {"days": hours / 24}


def pass_in(forecast: Forecast) -> str:
    """The list's short form: ``fold in ~6 steps``, ``fold at the next step``, or
    ``no fold forecast``, in the active language."""
    steps, high = forecast.steps, forecast.steps_high
    if steps is None:
        return _("no fold forecast")
    if high == 1:
        return _("fold at the next step")
    shown = steps
    return ngettext("fold in ~%(steps)d step", "fold in ~%(steps)d steps", shown) % {"steps": shown}
