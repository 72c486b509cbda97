"""Parity: our fold equals the host's own projection cache, number for number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dshweb.core.index import HomeIndex
from tests.conftest import all_homes, host_caches

PROJECTIONS = ("tokenUsage", "contextPressure", "contextBreakdown")


def _cases() -> list[Any]:
    cases = []
    for home in all_homes():
        for session_id, rows in host_caches(home).items():
            cases.append(pytest.param(home, session_id, rows, id=f"{home.name}/{session_id}"))
    return cases


CASES = _cases()


def test_there_is_something_to_compare() -> None:
    assert len(CASES) >= 4


@pytest.mark.parametrize(("home", "session_id", "rows"), CASES)
def test_fold_equals_host_state(home: Path, session_id: str, rows: dict[str, Any]) -> None:
    seqs = {rows[key]["seq"] for key in PROJECTIONS}
    assert len(seqs) == 1, "the host cache's three rows disagree on their seq"
    index = HomeIndex(home, stop_after_seq=seqs.pop())
    index.refresh()
    trackers = [t for t in index.trackers.values() if t.session_id == session_id]
    assert len(trackers) == 1
    state = trackers[0].meter.host_state()
    for key in PROJECTIONS:
        assert state[key] == rows[key]["val"], key
    assert trackers[0].meter.problems == []
    assert trackers[0].error is None


@pytest.mark.parametrize(("home", "session_id", "rows"), CASES)
def test_views_follow_from_host_state(home: Path, session_id: str, rows: dict[str, Any]) -> None:
    seq = rows["contextPressure"]["seq"]
    index = HomeIndex(home, stop_after_seq=seq)
    index.refresh()
    (shot,) = [s for s in index.snapshots() if s.session_id == session_id]
    pressure = rows["contextPressure"]["val"]
    expected_pressure = {"contextWindow": pressure["contextWindow"]}
    if "pressureTokens" in pressure:
        expected_pressure["pressureTokens"] = pressure["pressureTokens"]
        expected_pressure["projectedTokens"] = max(
            0,
            pressure["pressureTokens"]
            + pressure["surfaceTokens"]
            - pressure["sampledSurfaceTokens"],
        )
    assert shot.context_pressure == expected_pressure
    assert shot.token_usage == rows["tokenUsage"]["val"]["totals"]
    assert shot.context_breakdown == rows["contextBreakdown"]["val"]["breakdown"]
    assert shot.last_seq == seq
