"""What each session's Compact status line reads: its latest request, kept in memory so
a pushed update of the session reads it without a query.

One way in: :func:`announce` (the process that changed a request reads it once and
sends its new state on the session's group, :class:`~dshweb.live.protocol.CompactChanged`);
every process with a socket on the session keeps the state the announcement carries
(:func:`remember`), so no socket asks the database again. A page load reads the database
afresh (``latest_record(..., fresh=True)``: a process without a socket on the session
heard nothing).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import cast

from dshweb.compaction.models import CompactionRequest
from dshweb.compaction.records import RequestRecord
from dshweb.core.lru import LRU
from dshweb.live.protocol import CompactChanged, RequestState, sent, session_group
from dshweb.live.startup import send_to_group

RECORDS_KEPT = 1024
"""Sessions whose latest request is kept (by home and id): those whose pages are open, and
then some. One not kept is read from the database again."""
_records: LRU[tuple[str, str], RequestRecord | None] = LRU(RECORDS_KEPT)


def _record(request: CompactionRequest | None) -> RequestRecord | None:
    if request is None:
        return None
    return RequestRecord(request.state, request.outcome, request.message, request.seq_at_request)


def _state(record: RequestRecord | None) -> RequestState | None:
    if record is None:
        return None
    return cast(RequestState, asdict(record))  # the same four fields


def latest_request(home: str, session_id: str) -> CompactionRequest | None:
    return CompactionRequest.objects.filter(home=home, session_id=session_id).first()


def latest_record(home: str, session_id: str, *, fresh: bool = False) -> RequestRecord | None:
    """The session's latest request, as the status line reads it: as kept, or read from
    the database when none is kept or ``fresh``."""
    key = (home, session_id)

    def read() -> RequestRecord | None:
        return _record(latest_request(home, session_id))

    if not fresh:
        return _records.get_or_make(key, read)
    record = read()
    _records.put(key, record)
    return record


def remember(home: str, session_id: str, state: RequestState | None) -> None:
    """Keep the state a :class:`~dshweb.live.protocol.CompactChanged` carries."""
    _records.put((home, session_id), None if state is None else RequestRecord(**state))


def announce(home: str, session_id: str) -> None:
    """Read the session's latest request, keep it, and tell its open pages (here and,
    through a shared channel layer, in every process)."""
    record = latest_record(home, session_id, fresh=True)
    message = CompactChanged(
        type="compact.changed", home=home, session_id=session_id, request=_state(record)
    )
    send_to_group(session_group(home, session_id), sent(message))


def forget_records() -> None:
    """Keep nothing (tests: the database they empty outlives no kept request)."""
    _records.clear()
