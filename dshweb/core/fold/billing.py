"""When and to whom a request is billed: its billing slot.

A provider's price depends on the model that answered and on when (peak or off-peak
hours, weekends). A :data:`Slot` names both, on the registry's clock (:func:`clock`):
whether the day is a weekend ``dsh-llm-cost`` bills off-peak all day, and the quarter
hour of the UTC day. Nothing here prices: :mod:`dshweb.core.fold.cost` turns slots into
dollars with the peak windows a server sets (quarter hours), so they can change without
folding a log again.
"""

from __future__ import annotations

from datetime import UTC, datetime

from dsh_llm_cost import pricing as registry

Route = tuple[str, str]
"""(model, provider) as the log names them."""
Clock = tuple[bool, int]
"""(a weekend billed off-peak all day, quarter hour of the UTC day 0–95); quarter −1: the
time is not known (billed at the base rate, as ``estimate_cost`` without ``at``)."""
Slot = tuple[str, str, bool, int]
"""A route and a clock: (model, provider, weekend, quarter)."""

NO_TIME = -1


def clock(time_ms: int | None) -> Clock:
    """Where ``time_ms`` (epoch ms) falls on the billing clock (a time that is not known,
    or that no calendar holds, is billed at the base rate)."""
    if time_ms is None:
        return (False, NO_TIME)
    try:
        at = datetime.fromtimestamp(time_ms / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):  # a time no calendar holds (a hostile log)
        return (False, NO_TIME)
    weekend = at >= registry.WEEKEND_OFF_PEAK_EFFECTIVE and at.weekday() >= 5
    return (weekend, (at.hour * 60 + at.minute) // 15)


def slot_of(route: Route, time_ms: int | None) -> Slot:
    return (*route, *clock(time_ms))
