"""When and to whom a request is billed: its billing slot.

A provider's price depends on the model that answered and on when (peak or off-peak
hours, weekends). A :data:`Slot` names both, on the registry's clock (:func:`clock`):
whether the day is a weekend ``dsh-llm-cost`` bills off-peak all day, and the quarter
hour of the UTC day; and, last, the UTC day itself, which no price reads but the totals by
day and week do (:mod:`dshweb.core.listing.spend`: every real time zone's offset is a
whole number of quarter hours, so a quarter hour of a UTC day lies in one local date).
Nothing here prices: :mod:`dshweb.core.fold.cost` turns slots into dollars with the peak
windows a server sets (quarter hours), so they can change without folding a log again.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from dsh_llm_cost import pricing as registry

Route = tuple[str, str]
"""(model, provider) as the log names them."""
Clock = tuple[bool, int, int]
"""(a weekend billed off-peak all day, quarter hour of the UTC day 0–95, the UTC day as
:meth:`datetime.date.toordinal`); quarter and day −1: the time is not known (billed at the
base rate, as ``estimate_cost`` without ``at``, and on no day)."""
Slot = tuple[str, str, bool, int, int]
"""A route and a clock: (model, provider, weekend, quarter, day)."""

NO_TIME = -1


def clock(time_ms: int | None) -> Clock:
    """Where ``time_ms`` (epoch ms) falls on the billing clock (a time that is not known,
    or that no calendar holds, is billed at the base rate)."""
    global _last_clock
    if time_ms is None:
        return (False, NO_TIME, NO_TIME)
    # Every instant of a quarter hour is on the same clock (the weekend rate starts on a
    # day's first): the requests of a session come many to a quarter hour.
    quarter = time_ms // QUARTER_MS
    last = _last_clock
    if last is not None and last[0] == quarter:
        return last[1]
    try:
        at = datetime.fromtimestamp(time_ms / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):  # a time no calendar holds (a hostile log)
        return (False, NO_TIME, NO_TIME)
    weekend = at >= registry.WEEKEND_OFF_PEAK_EFFECTIVE and at.weekday() >= 5
    found = (weekend, (at.hour * 60 + at.minute) // 15, at.toordinal())
    _last_clock = (quarter, found)
    return found


_last_clock: tuple[int, Clock] | None = None


def slot_of(route: Route, time_ms: int | None) -> Slot:
    return (*route, *clock(time_ms))


def undated(slot: Slot) -> Slot:
    """``slot`` on no day in particular: what a price reads (a total over many days keeps
    one entry per clock, not one per day)."""
    return (slot[0], slot[1], slot[2], slot[3], NO_TIME)


def slot_start_ms(day: int, quarter: int) -> int:
    """When quarter hour ``quarter`` of UTC day ``day`` (an ordinal) begins, in epoch ms."""
    return ((day - EPOCH_DAY) * 96 + quarter) * QUARTER_MS


QUARTER_MS = 15 * 60 * 1000
EPOCH_DAY = date(1970, 1, 1).toordinal()
