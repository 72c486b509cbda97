"""A span of figures as a person reads it: ``4–9``, and one figure when both ends read the
same (``9,759``, never ``9,759–9,759``).

Every range a page or an alert shows (a setting known between two values, the context a
fold would leave, a forecast's steps, a fold's events) is joined here, after each end is
formatted as it is shown: two ends that differ below what is shown read as one figure.
"""

from __future__ import annotations

DASH = "\N{EN DASH}"


def span_text(low: str, high: str) -> str:
    """``low–high``, or ``low`` alone when the two ends read the same."""
    return low if low == high else f"{low}{DASH}{high}"
