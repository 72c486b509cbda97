"""A Compact request as its status line reads it (plain data: the session page's display
code, :mod:`dshweb.sessions.display.compact_status`, imports it without Django)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """The parts of a recorded request the status needs."""

    state: str
    outcome: str
    message: str
    seq_at_request: int
