"""Parity: our fold equals the host's own projections, number for number.

Three kinds of host answers are compared, each at its own seq: our state through that seq,
kept while each session is folded once (the views of the final cache, by folding the home
with ``HomeIndex(home, stop_after_seq=seq)``):

- the projection cache each home holds, folded through its last event (full states);
- ``live`` checkpoints (``<home>/checkpoints.json``): versions of that cache the host
  wrote while the fixture was recorded, folded through points inside the session (full
  states, field for field, for every row whose ``seq`` is the checkpoint's);
- ``replayed`` checkpoints (``<home>/checkpoints.json``, and
  ``tests/fixtures/corpus-checkpoints.json`` for the shared corpus when it is present):
  what ``dsh web``'s ``session/projections`` answered for the log cut after ``seq``
  (public values).
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import zstandard

from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import LogFile, session_logs
from dshweb.core.log.wire import AnyEvent
from tests.conftest import CORPUS_HOME, REPO, all_homes, host_caches, session_log_paths

PROJECTIONS = ("tokenUsage", "contextPressure", "contextBreakdown")
CHECKPOINTS = "checkpoints.json"
CORPUS_CHECKPOINTS = REPO / "tests" / "fixtures" / "corpus-checkpoints.json"


# --- the logs ----------------------------------------------------------------------


@cache
def _log(home: Path, session_id: str) -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """The header and the events of one session's log."""
    for path in session_log_paths(home):
        raw = path.read_bytes()
        if path.name.endswith(".zstd"):
            reader = zstandard.ZstdDecompressor().stream_reader(
                io.BytesIO(raw), read_across_frames=True
            )
            raw = reader.read()
        lines = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
        if lines and lines[0].get("id") == session_id:
            return lines[0], tuple(lines[1:])
    raise LookupError(f"{session_id} not in {home}")


# --- our fold at a seq ------------------------------------------------------------------


@dataclass(frozen=True)
class Folded:
    state: dict[str, Any]
    problems: tuple[str, ...]
    error: object


class _Recorder(SessionTracker):
    """A session's fold that keeps the host's state as it stood after each seq asked for:
    one pass over the log answers every checkpoint in it (as folding it again through
    each seq would, ``HomeIndex(home, stop_after_seq=seq)``)."""

    def __init__(self, log: LogFile, wanted: Iterable[int]) -> None:
        super().__init__(log)
        self.pending = sorted(set(wanted), reverse=True)
        self.states: dict[int, tuple[dict[str, Any], tuple[str, ...]]] = {}

    def _fold(self, event: AnyEvent) -> None:
        while event.seq is not None and self.pending and self.pending[-1] < event.seq:
            self._keep(self.pending.pop())  # the state through that seq: before this event
        super()._fold(event)

    def _keep(self, seq: int) -> None:
        self.states[seq] = (copy.deepcopy(self.meter.host_state()), tuple(self.meter.problems))

    def folded(self) -> dict[int, Folded]:
        """Every seq asked for, once the log is read (those past its end: its end)."""
        while self.pending:
            self._keep(self.pending.pop())
        return {
            seq: Folded(state, problems, self.error)
            for seq, (state, problems) in self.states.items()
        }


@cache
def _folds(home: Path) -> dict[str, dict[int, Folded]]:
    """Each session of ``home`` folded once, at every seq a case asks about in that home."""
    wanted = _WANTED.get(home, set())
    folded: dict[str, dict[int, Folded]] = {}
    for log in session_logs(home):
        tracker = _Recorder(log, wanted)
        tracker.refresh()
        assert tracker.session_id not in folded, f"{tracker.session_id} twice in {home}"
        folded[tracker.session_id] = tracker.folded()
    return folded


def _ours(home: Path, session_id: str, seq: int) -> Folded:
    folded = _folds(home).get(session_id, {}).get(seq)
    assert folded is not None, f"{session_id} not folded in {home}"
    assert folded.problems == ()
    assert folded.error is None
    return folded


def _views(state: dict[str, Any]) -> dict[str, Any]:
    """The public values the host derives from the three states."""
    pressure = state["contextPressure"]
    view: dict[str, Any] = {}
    if "pressureTokens" in pressure:
        view["pressureTokens"] = pressure["pressureTokens"]
        view["projectedTokens"] = max(
            0,
            pressure["pressureTokens"]
            + pressure["surfaceTokens"]
            - pressure["sampledSurfaceTokens"],
        )
    if "contextWindow" in pressure:
        view["contextWindow"] = pressure["contextWindow"]
    return {
        "tokenUsage": state["tokenUsage"]["totals"],
        "contextPressure": view,
        "contextBreakdown": state["contextBreakdown"]["breakdown"],
    }


# --- the host's answers -----------------------------------------------------------------


def _checkpoints(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"live": [], "replayed": []}
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def _corpus_replayed() -> list[dict[str, Any]]:
    """The corpus checkpoints, when the corpus present is the one they were taken from."""
    if not (CORPUS_HOME / "sessions").is_dir() or not CORPUS_CHECKPOINTS.exists():
        return []
    data = _checkpoints(CORPUS_CHECKPOINTS)
    for session_id, identity in data["sessions"].items():
        try:
            header, events = _log(CORPUS_HOME, session_id)
        except LookupError:
            return []
        last_seq = events[-1]["seq"] if events else -1
        if (header.get("createdAt"), last_seq) != (identity["createdAt"], identity["lastSeq"]):
            return []  # another corpus than the one the checkpoints were taken from
    replayed: list[dict[str, Any]] = data["replayed"]
    return replayed


def _id(home: Path, session_id: str, seq: int) -> str:
    return f"{home.name}/{session_id}@{seq}"


def _final_cases() -> list[Any]:
    cases = []
    for home in all_homes():
        for session_id, rows in host_caches(home).items():
            cases.append(
                pytest.param(
                    home,
                    session_id,
                    rows,
                    id=f"{home.name}/{session_id}",
                )
            )
    return cases


def _live_points() -> list[tuple[Path, dict[str, Any]]]:
    return [
        (home, point) for home in all_homes() for point in _checkpoints(home / CHECKPOINTS)["live"]
    ]


def _replayed_points() -> list[tuple[Path, dict[str, Any]]]:
    points = [
        (home, point)
        for home in all_homes()
        for point in _checkpoints(home / CHECKPOINTS)["replayed"]
    ]
    points += [(CORPUS_HOME, point) for point in _corpus_replayed()]
    return points


def _state_cases() -> list[Any]:
    return [
        pytest.param(
            home,
            point["sessionId"],
            point["seq"],
            point["rows"],
            id=_id(home, point["sessionId"], point["seq"]),
        )
        for home, point in _live_points()
    ]


def _value_cases() -> list[Any]:
    cases = [
        pytest.param(
            home,
            point["sessionId"],
            point["seq"],
            {
                key: _views({k: r["val"] for k, r in point["rows"].items()})[key]
                for key in PROJECTIONS
            },
            id="live:" + _id(home, point["sessionId"], point["seq"]),
        )
        for home, point in _live_points()
    ]
    cases += [
        pytest.param(
            home,
            point["sessionId"],
            point["seq"],
            point["values"],
            id="replayed:" + _id(home, point["sessionId"], point["seq"]),
        )
        for home, point in _replayed_points()
    ]
    return cases


CASES = _final_cases()
STATE_CASES = _state_cases()
VALUE_CASES = _value_cases()
_WANTED: dict[Path, set[int]] = {}
for _case in [*STATE_CASES, *VALUE_CASES]:
    _WANTED.setdefault(_case.values[0], set()).add(_case.values[2])
for _case in CASES:
    _WANTED.setdefault(_case.values[0], set()).update(r["seq"] for r in _case.values[2].values())


def test_there_is_something_to_compare() -> None:
    assert len(CASES) >= 4
    assert len(STATE_CASES) >= 50
    assert len(VALUE_CASES) >= len(STATE_CASES)


# --- the final cache --------------------------------------------------------------------


@pytest.mark.parametrize(("home", "session_id", "rows"), CASES)
def test_fold_equals_host_state(home: Path, session_id: str, rows: dict[str, Any]) -> None:
    seqs = {rows[key]["seq"] for key in PROJECTIONS}
    assert len(seqs) == 1, "the host cache's three rows disagree on their seq"
    state = _ours(home, session_id, seqs.pop()).state
    for key in PROJECTIONS:
        assert state[key] == rows[key]["val"], key


@pytest.mark.parametrize(("home", "session_id", "rows"), CASES)
def test_views_follow_from_host_state(home: Path, session_id: str, rows: dict[str, Any]) -> None:
    seq = rows["contextPressure"]["seq"]
    index = HomeIndex(home, stop_after_seq=seq)
    index.refresh()
    (shot,) = [s for s in index.snapshots() if s.session_id == session_id]
    expected = _views({key: rows[key]["val"] for key in PROJECTIONS})
    assert shot.context_pressure == expected["contextPressure"]
    assert shot.token_usage == expected["tokenUsage"]
    assert shot.context_breakdown == expected["contextBreakdown"]
    assert shot.last_seq == seq


# --- inside each session ----------------------------------------------------------------


@pytest.mark.parametrize(("home", "session_id", "seq", "rows"), STATE_CASES)
def test_checkpoint_state_equals_host_state(
    home: Path, session_id: str, seq: int, rows: dict[str, Any]
) -> None:
    """A live checkpoint: every row folded through ``seq``, full state field for field."""
    state = _ours(home, session_id, seq).state
    compared = [key for key in PROJECTIONS if rows[key]["seq"] == seq]
    assert compared, "no row of this checkpoint is folded through its seq"
    for key in compared:
        assert state[key] == rows[key]["val"], key


@pytest.mark.parametrize(("home", "session_id", "seq", "values"), VALUE_CASES)
def test_checkpoint_values_equal_host_values(
    home: Path, session_id: str, seq: int, values: dict[str, Any]
) -> None:
    """A live or replayed checkpoint: the public values (the ring's and the panel's)."""
    ours = _views(_ours(home, session_id, seq).state)
    for key in PROJECTIONS:
        assert ours[key] == values[key], key


# --- what the checkpoints cover ---------------------------------------------------------

FOLD_TYPES = ("compaction/summary", "compaction/prune")


def _fixture_homes() -> list[Path]:
    return [home for home in all_homes() if home.parent.name == "homes"]


@pytest.mark.parametrize("home", _fixture_homes(), ids=lambda home: home.name)
def test_every_fixture_session_has_checkpoints_inside(home: Path) -> None:
    """At least three distinct seqs per session where the host's full state was caught
    live (all three rows folded through that seq), and a checkpoint (live or replayed) in
    every turn (or command) that follows a system replace, a fold or a re-attachment, at
    or after that event."""
    data = _checkpoints(home / CHECKPOINTS)
    assert data["live"] or data["replayed"], f"no {CHECKPOINTS} in {home.name}"
    for session_id in host_caches(home):
        events = _log(home, session_id)[1]
        full = sorted(
            {
                point["seq"]
                for point in data["live"]
                if point["sessionId"] == session_id
                and all(point["rows"][key]["seq"] == point["seq"] for key in PROJECTIONS)
            }
        )
        assert len(full) >= 3, f"{session_id}: live full states at {full}"
        seqs = sorted(
            {
                point["seq"]
                for kind in ("live", "replayed")
                for point in data[kind]
                if point["sessionId"] == session_id
            }
        )
        assert len(seqs) >= 3, f"{session_id}: checkpoints at {seqs}"
        ends = [e["seq"] for e in events if e["type"] in ("turn/end", "command/done")]
        ends.append(events[-1]["seq"])
        for event in events:
            changes = (
                event["type"] == "session/end-seed"
                or (event["type"] == "system/message" and isinstance(event.get("surfaceOp"), dict))
                or event["type"] in FOLD_TYPES
            )
            if not changes:
                continue
            until = min(end for end in ends if end >= event["seq"])
            assert any(event["seq"] <= s <= until for s in seqs), (
                f"{session_id}: no checkpoint between {event['type']} at {event['seq']} "
                f"and {until} (checkpoints at {seqs})"
            )
