"""The one base class for everything the core reports as a problem with its input."""

from __future__ import annotations

from dshweb.core.said import say


class DshError(Exception):
    """A DSH home, log or patch file that cannot be read as DSH writes it."""


class HomeError(DshError):
    """The DSH home itself is missing or unreadable."""


class LogError(DshError):
    """A session log holds bytes that are not what DSH appends.

    ``offset`` is the byte offset in the log file where the bad frame or line starts;
    ``seq`` is the sequence number the bad line would have had, when known.
    """

    def __init__(self, message: str, *, offset: int, seq: int | None = None) -> None:
        if seq is None:
            super().__init__(say("at-byte", problem=message, offset=offset))
        else:
            super().__init__(say("at-byte-seq", problem=message, offset=offset, seq=seq))
        self.offset = offset
        self.seq = seq
