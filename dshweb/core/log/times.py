"""DSH's event times (epoch milliseconds) as people and files show them."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(ms: int | None) -> str | None:
    """DSH event time (epoch milliseconds) → ``2025-06-01T12:34:56.789Z``; a time no
    calendar can show (a log can hold any number) is ``None``."""
    if ms is None:
        return None
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
