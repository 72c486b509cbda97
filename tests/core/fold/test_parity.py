"""Parity: our fold equals the host's own projections, number for number.

One test per session log folds it once, and each time the fold has gone through a seq
the host answered about, compares our state through that seq with the answer:

- the projection cache each home holds, through the session's last event: the three full
  states, and the views a snapshot of ours shows (``tokenUsage``, ``contextPressure``,
  ``contextBreakdown``, ``lastSeq``) against those the host derives from the cache;
- ``live`` checkpoints (``<home>/checkpoints.json``): versions of that cache the host
  wrote while the fixture was recorded, folded through points inside the session: every
  row whose ``seq`` is the checkpoint's, field for field, and the public values the host
  derives from the three rows;
- ``replayed`` checkpoints (``<home>/checkpoints.json``, and
  ``tests/fixtures/corpus-checkpoints.json`` for the shared corpus when it is the corpus
  they were taken from): what ``dsh web``'s ``session/projections`` answered for the log
  cut after ``seq`` (public values).

A failure lists the first differences, each with its seq, what was compared and the path
of the field inside it. The cases come from directory listings alone; the logs and the
checkpoints are read inside the tests. Each session's test counts the comparisons it made
and fails unless they are all those its host answers call for, and each home must call
for some (``test_each_home_calls_for_comparisons``): an empty parity fails.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import zstandard

from dshweb.core.fold.session import SessionTracker, take_snapshot
from dshweb.core.log.home import LogFile, encode_segment, session_logs
from dshweb.core.log.wire import AnyEvent
from tests.conftest import CORPUS_HOME, REPO, all_homes, host_caches, session_log_paths
from tests.support.differences import Difference, differences, fail_on

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


def _views(state: Mapping[str, Any]) -> dict[str, Any]:
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


@dataclass(frozen=True, slots=True)
class Answer:
    """What the host said about one session through ``seq``, by what of ours it is
    compared with (each key is one comparison)."""

    source: str
    """``cache``, ``live`` or ``replayed``."""
    seq: int
    states: Mapping[str, Any] = field(default_factory=dict)
    """Full states by projection: our ``meter.host_state()``."""
    values: Mapping[str, Any] = field(default_factory=dict)
    """Public values by projection: :func:`_views` of our state."""
    shown: Mapping[str, Any] = field(default_factory=dict)
    """What a snapshot of ours shows: its three views and its ``lastSeq``."""

    @property
    def comparisons(self) -> int:
        return len(self.states) + len(self.values) + len(self.shown)


@cache
def _checkpoints(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"live": [], "replayed": []}
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


@cache
def _corpus_replayed() -> tuple[dict[str, Any], ...]:
    """The corpus checkpoints, when the corpus present is the one they were taken from."""
    if not (CORPUS_HOME / "sessions").is_dir() or not CORPUS_CHECKPOINTS.exists():
        return ()
    data = _checkpoints(CORPUS_CHECKPOINTS)
    for session_id, identity in data["sessions"].items():
        try:
            header, events = _log(CORPUS_HOME, session_id)
        except LookupError:
            return ()
        last_seq = events[-1]["seq"] if events else -1
        if (header.get("createdAt"), last_seq) != (identity["createdAt"], identity["lastSeq"]):
            return ()  # another corpus than the one the checkpoints were taken from
    return tuple(data["replayed"])


def _cache_answer(rows: Mapping[str, Any]) -> Answer:
    """The home's projection cache: full states, and the views the host derives."""
    seqs = {rows[key]["seq"] for key in PROJECTIONS}
    assert len(seqs) == 1, f"the host cache's three rows disagree on their seq: {seqs}"
    seq = seqs.pop()
    states = {key: rows[key]["val"] for key in PROJECTIONS}
    return Answer("cache", seq, states=states, shown={**_views(states), "lastSeq": seq})


def _live_answer(point: Mapping[str, Any]) -> Answer:
    """A live checkpoint: the rows folded through its seq, and the values of all three."""
    seq, rows = point["seq"], point["rows"]
    states = {key: rows[key]["val"] for key in PROJECTIONS if rows[key]["seq"] == seq}
    assert states, f"{point['sessionId']}@{seq}: no row of this checkpoint is folded through it"
    values = _views({key: row["val"] for key, row in rows.items()})
    return Answer("live", seq, states=states, values={k: values[k] for k in PROJECTIONS})


def _replayed_answer(point: Mapping[str, Any]) -> Answer:
    return Answer("replayed", point["seq"], values={k: point["values"][k] for k in PROJECTIONS})


@cache
def _answers(home: Path) -> dict[str, tuple[Answer, ...]]:
    """Every answer the host gave about the sessions of ``home``, by session id."""
    found: dict[str, list[Answer]] = {}
    for session_id, rows in host_caches(home).items():
        found.setdefault(session_id, []).append(_cache_answer(rows))
    data = _checkpoints(home / CHECKPOINTS)
    for point in data["live"]:
        found.setdefault(point["sessionId"], []).append(_live_answer(point))
    replayed = list(data["replayed"])
    if home == CORPUS_HOME:
        replayed += _corpus_replayed()
    for point in replayed:
        found.setdefault(point["sessionId"], []).append(_replayed_answer(point))
    return {session_id: tuple(answers) for session_id, answers in found.items()}


# --- our fold, compared as it goes ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Mismatch:
    seq: int
    what: str
    """The answer's source and what of ours it was compared with."""
    difference: Difference

    def line(self) -> str:
        return f"seq {self.seq} {self.what}: {self.difference.line('ours', 'host')}"


class _Comparer(SessionTracker):
    """A session's fold that compares each answer as soon as the fold has gone through
    its seq (before the first event past it; those past the log's end, at its end): one
    pass over the log answers every checkpoint in it, as folding it again through each
    seq (``HomeIndex(home, stop_after_seq=seq)``) would."""

    def __init__(self, log: LogFile, answers: Iterable[Answer], home: Path) -> None:
        super().__init__(log)
        self.home = home
        self.pending = sorted(answers, key=lambda answer: answer.seq, reverse=True)
        self.made = 0
        self.mismatches: list[Mismatch] = []

    def _fold(self, event: AnyEvent) -> None:
        while event.seq is not None and self.pending and self.pending[-1].seq < event.seq:
            self._compare(self.pending.pop())
        super()._fold(event)

    def finish(self) -> None:
        """Compare the answers past the log's end, once it is all folded."""
        while self.pending:
            self._compare(self.pending.pop())

    def _compare(self, answer: Answer) -> None:
        state = self.meter.host_state()
        self._check(answer, "fold", "problems", tuple(self.meter.problems), (), counted=False)
        for key, host in answer.states.items():
            self._check(answer, "state", key, state[key], host)
        if answer.values:
            values = _views(state)
            for key, host in answer.values.items():
                self._check(answer, "values", key, values[key], host)
        if answer.shown:
            shot = take_snapshot(self, home=self.home, live=False, engine=None)
            shown = {
                "tokenUsage": shot.token_usage,
                "contextPressure": shot.context_pressure,
                "contextBreakdown": shot.context_breakdown,
                "lastSeq": shot.last_seq,
            }
            for key, host in answer.shown.items():
                self._check(answer, "snapshot", key, shown[key], host)

    def _check(
        self, answer: Answer, what: str, path: str, ours: Any, host: Any, *, counted: bool = True
    ) -> None:
        self.made += counted
        self.mismatches.extend(
            Mismatch(answer.seq, f"{answer.source} {what}", difference)
            for difference in differences(ours, host, path)
        )


def _sessions() -> list[Any]:
    """(home, log) of every session log, from the folders alone."""
    return [
        pytest.param(home, log, id=f"{home.name}/{log.session_dir.name}")
        for home in all_homes()
        for log in session_logs(home)
    ]


@pytest.mark.parametrize(("home", "log"), _sessions())
def test_a_session_folds_as_the_host_answered(home: Path, log: LogFile) -> None:
    """Every answer about the session (its cache, its live and replayed checkpoints),
    every value in it, compared in one fold of its log."""
    by_folder = {encode_segment(sid): answers for sid, answers in _answers(home).items()}
    answers = by_folder.get(log.session_dir.name, ())
    if not answers:
        pytest.skip("the host answered nothing about this session")
    tracker = _Comparer(log, answers, home)
    tracker.refresh()
    tracker.finish()
    assert encode_segment(tracker.session_id) == log.session_dir.name, tracker.session_id
    assert tracker.error is None, tracker.error
    found = tracker.mismatches
    fail_on(
        [mismatch.line() for mismatch in found],
        f"{tracker.session_id}: {len(found):,} differences in {tracker.made:,} "
        "comparisons with the host",
    )
    planned = sum(answer.comparisons for answer in answers)
    assert tracker.made == planned, f"{tracker.made:,} comparisons made of {planned:,}"


# --- what there is to compare -----------------------------------------------------------


@pytest.mark.parametrize("home", all_homes(), ids=lambda home: home.name)
def test_each_home_calls_for_comparisons(home: Path) -> None:
    """The host answered about the home (so its session tests, which each make every
    comparison their answers call for, compare something), and only about sessions
    whose log is there, each in a folder of its own."""
    answers = _answers(home)
    assert sum(a.comparisons for session in answers.values() for a in session) > 0
    folders = [log.session_dir.name for log in session_logs(home)]
    assert len(folders) == len(set(folders)), f"a session twice in {home}: {sorted(folders)}"
    unfolded = sorted(sid for sid in answers if encode_segment(sid) not in folders)
    assert not unfolded, f"answers about sessions with no log in {home}: {unfolded}"


def test_there_is_something_to_compare() -> None:
    """Host caches of at least four sessions, fifty live checkpoints, and as many
    checkpoints with public values."""
    answers = [a for home in all_homes() for s in _answers(home).values() for a in s]
    caches = [a for a in answers if a.source == "cache"]
    live = [a for a in answers if a.source == "live"]
    valued = [a for a in answers if a.values]
    assert len(caches) >= 4
    assert len(live) >= 50
    assert len(valued) >= len(live)


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
