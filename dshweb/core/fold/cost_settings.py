"""What a person sets about costs, read without the fold (``settings.py`` checks them at
start-up, before any of it is imported): the peak windows (:func:`parse_windows`) and the
models costed as another the ``dsh-llm-cost`` registry knows (:func:`parse_aliases`).
:mod:`dshweb.core.fold.cost` costs with them.
"""

from __future__ import annotations

import re

from dsh_llm_cost import pricing as registry

Window = tuple[int, int]
"""A peak window in quarter hours of the UTC day: [start, end)."""

DEFAULT_PRICE_AS = "deepseek-flash=deepseek-v4-flash"
"""What a server prices as another model when nobody says otherwise: DSH's own default
model, ``deepseek-flash`` (DeepSeek V4.1 Flash), which ``dsh-llm-cost`` does not list, as
the registry's nearest entry. Every figure priced so says so; ``none`` turns it off."""

NO_ALIASES = "none"
"""The ``DSHWEB_PRICE_AS`` / ``--price-as`` value that prices no model as another."""

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def parse_windows(text: str) -> tuple[Window, ...]:
    """``"01:00-04:00, 06:00-10:00"`` (UTC, quarter hours; ``24:00`` ends a day) as windows;
    ``ValueError`` with what is wrong."""
    windows: list[Window] = []
    for part in (p for p in text.split(",") if p.strip()):
        found = _WINDOW.match(part)
        if found is None:
            raise ValueError(f"{part.strip()!r} is not HH:MM-HH:MM")
        h1, m1, h2, m2 = (int(g) for g in found.groups())
        for hours, minutes in ((h1, m1), (h2, m2)):
            if minutes % 15 or minutes >= 60 or hours > 24 or (hours == 24 and minutes):
                raise ValueError(f"{part.strip()!r}: times are quarter hours from 00:00 to 24:00")
        start, end = h1 * 4 + m1 // 15, h2 * 4 + m2 // 15
        if start >= end:
            raise ValueError(f"{part.strip()!r} ends before it starts")
        windows.append((start, end))
    return tuple(sorted(windows))


def parse_aliases(text: str) -> tuple[tuple[str, str], ...]:
    """``"deepseek-flash=deepseek-v4-flash, …"`` as (model, registry model) pairs;
    ``ValueError`` naming a registry model that does not exist; :data:`NO_ALIASES`: none."""
    pairs: list[tuple[str, str]] = []
    if text.strip().lower() == NO_ALIASES:
        return ()
    for part in (p.strip() for p in text.split(",") if p.strip()):
        model, sep, target = (s.strip() for s in part.partition("="))
        if not sep or not model or not target:
            raise ValueError(f"{part!r} is not model=registry-model")
        if registry.resolve_pricing(target).status == "unknown":
            raise ValueError(f"{target!r} is not in the dsh-llm-cost registry")
        pairs.append((model, target))
    return tuple(pairs)
