"""A DSH home of sessions whose requests come at chosen times, on chosen models, in chosen
project folders: the cost by day, week and project of known requests, each priced again
here by the registry itself (``dsh_llm_cost.estimate_cost`` at the request's time)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dsh_llm_cost

from dshweb.core.log.home import filed_as
from tests.support.logbuilder import frame

PROVIDER = "deepseek-official"
PRICED = "deepseek-v4-pro"
UNPRICED = "mystery-model-9"


@dataclass(frozen=True)
class Request:
    at: datetime
    model: str = PRICED
    uncached: int = 2_000
    output: int = 300
    cache_read: int = 40_000

    @property
    def time_ms(self) -> int:
        return int(self.at.timestamp() * 1000)

    @property
    def usd(self) -> float | None:
        """What the registry bills it (``None``: the model has no price)."""
        found = dsh_llm_cost.estimate_cost(
            self.model,
            PROVIDER,
            input_tokens=self.uncached,
            output_tokens=self.output,
            cache_read_tokens=self.cache_read,
            at=self.at,
        )
        return None if found is None else found.total_usd


def at(text: str) -> datetime:
    """A UTC time written ``2026-09-01T23:50``."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def session_events(requests: list[Request]) -> list[dict[str, Any]]:
    """A ``request/header`` (the model) and an ``assistant/message`` (its usage) per
    request, each its own step."""
    events: list[dict[str, Any]] = []
    for step, request in enumerate(requests, start=1):
        config = {"provider": PROVIDER, "model": request.model}
        usage = {
            "inputTokens": request.uncached,
            "outputTokens": request.output,
            "cacheReadTokens": request.cache_read,
        }
        time = request.time_ms
        events.append(
            {
                "type": "request/header",
                "seq": len(events) + 1,
                "time": time,
                "data": {"header": {"config": config}},
            }
        )
        events.append(
            {
                "type": "assistant/message",
                "seq": len(events) + 1,
                "time": time,
                "data": {"turn": 1, "step": step, "usage": usage},
            }
        )
    return events


def write_session(home: Path, session_id: str, cwd: str, requests: list[Request]) -> Path:
    """The session's log, where DSH files it (``sessions/--project--/<id>/``), one frame
    per request as DSH appends them."""
    folder = home / filed_as(session_id, cwd)
    folder.mkdir(parents=True, exist_ok=True)
    header = {
        "type": "session",
        "version": 4,
        "id": session_id,
        "createdAt": requests[0].time_ms if requests else 1,
        "cwd": cwd,
        "isSeeded": False,
        "delegationDepth": 0,
    }
    events = session_events(requests)
    log = folder / "session.v4.jsonl.zstd"
    log.write_bytes(
        frame(header) + b"".join(frame(*events[i : i + 2]) for i in range(0, len(events), 2))
    )
    return log


SESSIONS: dict[str, tuple[str, list[Request]]] = {
    # Across UTC midnight: two UTC days, one day in Shanghai (07:50 and 08:10 there).
    "midnight": (
        "/work/shop",
        [Request(at("2026-09-01T23:50")), Request(at("2026-09-02T00:10"), uncached=5_000)],
    ),
    # After 16:00 UTC: the same UTC day, the next day in Shanghai; one model without a price.
    "evening": (
        "/work/shop",
        [
            Request(at("2026-09-02T16:30"), output=1_200),
            Request(at("2026-09-02T16:35"), model=UNPRICED),
        ],
    ),
    # Another project, the week before (a Friday), and a priced request today.
    "other": (
        "/work/blog",
        [Request(at("2026-08-28T09:00"), cache_read=90_000), Request(at("2026-09-02T15:40"))],
    ),
}
NOW = at("2026-09-02T16:40")
"""A Wednesday, ISO week 36 of 2026."""


def spend_home(home: Path) -> Path:
    """A home of :data:`SESSIONS` (with a profile, so it reads as DSH's)."""
    (home / "sessions").mkdir(parents=True, exist_ok=True)
    for session_id, (cwd, requests) in SESSIONS.items():
        write_session(home, session_id, cwd, requests)
    return home


def all_requests() -> list[Request]:
    return [request for _, requests in SESSIONS.values() for request in requests]
