"""dsh-context-truth's compact token figure, both ways: dshweb's one writer and one reader.

:func:`format_line_tokens` is the plugin's ``formatTokens`` (``lib/index.js``, 0.1.3):
``172437`` → ``172K``, ``1000000`` → ``1.00M``, ``999500`` → ``1000K``. ``Math.round`` is
:func:`~dshweb.core.fold.gauge.round_half_up`; ``toFixed(2)`` rounds the exact binary value
half up, so 1,125,000 (1.125, an exact binary half) is ``1.13M`` while 1,005,000 (1.005,
stored just below the half) is ``1.00M``: a decimal quantize of the float, never Python's
``f"{x:.2f}"`` (half to even) nor scaling by 100 first (which rounds twice).
tests/core/fold/test_line_tokens.py holds the figures the plugin's JavaScript gives.

:func:`read_line_tokens` takes such a figure back to tokens, for reading the line the model
was told (:mod:`dshweb.core.fold.told`). Both the line rendered here
(:mod:`dshweb.core.settings.occupancy`) and the told-versus-truth comparison use these two.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from dshweb.core.fold.gauge import round_half_up

_SCALES = {"K": 1_000, "M": 1_000_000}


def format_line_tokens(value: float) -> str:
    """A token figure as dsh-context-truth writes it into the line the model reads.

    Not the pages' figure (:func:`dshweb.sessions.display.figures.format_page_tokens`,
    ``1.0M``, ``1.2K``): this one must be the plugin's text byte for byte (its ``K`` has no
    decimal, its ``M`` two), so it keeps the plugin's rules; ``?`` for what is not a
    non-negative finite number, as the plugin prints it.
    """
    if not math.isfinite(value) or value < 0:
        return "?"
    if value >= 1e6:
        return f"{Decimal(value / 1e6).quantize(Decimal('0.01'), ROUND_HALF_UP)}M"
    if value >= 1e3:
        return f"{round_half_up(value / 1e3)}K"
    return str(round_half_up(value))


def read_line_tokens(text: str) -> int | None:
    """The plugin's compact figure back in tokens: ``12K`` → 12,000, ``1.13M`` →
    1,130,000, ``850`` → 850 (None for ``under …`` or anything else)."""
    scale = _SCALES.get(text[-1:], 1)
    number = text[:-1] if scale != 1 else text
    try:
        return round(float(number) * scale)
    except ValueError:
        return None
