"""What dshweb keeps per session is bounded by design: a session of a year costs what a
session of a day does. The ledger keeps its newest folds and refused commands one by
one and counts the rest; a log's problems are kept word for word up to a cap."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from dshweb.core.fold import ledger as ledger_module
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.ledger import MAX_COMPACTIONS, MAX_REFUSED
from dshweb.core.fold.meter import MAX_PROBLEMS
from dshweb.core.fold.session import SessionTracker, take_snapshot
from dshweb.core.log.home import LogFile
from dshweb.core.profile.effective import EngineConfig
from dshweb.sessions.display.ledger_pages import LEDGER_PAGE_SIZE, ledger_page, refused_tail
from dshweb.sessions.display.ledger_rows import compaction_rows
from tests.support.compactionlog import long_session, user_message
from tests.support.logbuilder import fold_in_pieces, frame, header


def _log(tmp_path: Path, events: list[dict[str, object]], name: str = "s") -> Path:
    path = tmp_path / name / "session.v4.jsonl.zstd"
    path.parent.mkdir(parents=True)
    chunks = [frame(header(name))]
    chunks += [frame(*events[i : i + 200]) for i in range(0, len(events), 200)]
    path.write_bytes(b"".join(chunks))
    return path


def _fold(path: Path) -> SessionTracker:
    tracker = SessionTracker(LogFile(path, 4, compressed=True))
    tracker.refresh()
    return tracker


def _refused_compacts(first_seq: int, count: int) -> list[dict[str, object]]:
    """``count`` ``/compact`` commands that folded nothing."""
    events: list[dict[str, object]] = []
    seq = first_seq
    for n in range(count):
        run = {"commandId": f"r-{n}", "name": "compact", "args": ""}
        done = {"commandId": f"r-{n}", "kind": "info", "text": "Nothing to compact."}
        events += [
            {"type": "command/run", "seq": seq, "time": 1000 + seq, "data": run},
            {"type": "command/done", "seq": seq + 1, "time": 1001 + seq, "data": done},
        ]
        seq += 2
    return events


def test_the_ledger_keeps_the_newest_compactions_and_counts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compactions = MAX_COMPACTIONS * 2 + 37
    events = long_session(compactions * 2, 2)
    events += _refused_compacts(events[-1]["seq"] + 1, MAX_REFUSED + 9)
    path = _log(tmp_path, events)
    kept = take_snapshot(_fold(path), home=tmp_path, live=False, engine=EngineConfig()).ledger
    with monkeypatch.context() as unbounded:
        unbounded.setattr(ledger_module, "MAX_COMPACTIONS", 1 << 30)
        unbounded.setattr(ledger_module, "MAX_REFUSED", 1 << 30)
        every = take_snapshot(_fold(path), home=tmp_path, live=False, engine=EngineConfig())
    whole = every.ledger
    assert len(whole.compactions) == whole.total == compactions
    assert len(kept.compactions) == MAX_COMPACTIONS and kept.total == compactions
    assert kept.first == compactions - MAX_COMPACTIONS + 1
    assert kept.compactions == whole.compactions[-MAX_COMPACTIONS:]
    counts = ("summaries", "failed", "prune_passes", "prunes", "dropped", "refused_total")
    assert {c: getattr(kept, c) for c in counts} == {c: getattr(whole, c) for c in counts}
    assert kept.summaries == compactions
    assert kept.tally() == whole.tally()
    assert len(kept.refused) == MAX_REFUSED and kept.refused_total == MAX_REFUSED + 9
    assert refused_tail(kept.refused, earlier=kept.refused_earlier).more == MAX_REFUSED + 4
    # Fold numbers go on from the first fold ever, in the pages and the downloads.
    newest = ledger_page(kept.compactions, first=kept.first)
    assert newest.total == compactions and newest.rows[0].number == compactions
    assert newest.rows[0].compaction == whole.compactions[-1]
    oldest = ledger_page(kept.compactions, first=kept.first, before=kept.first + LEDGER_PAGE_SIZE)
    assert oldest.older is None and oldest.rows[-1].number == kept.first
    assert oldest.rows[-1].compaction == whole.compactions[kept.first - 1]
    rows = list(compaction_rows(kept.compactions, RateBook(), first=kept.first))
    assert rows == list(compaction_rows(whole.compactions, RateBook()))[-MAX_COMPACTIONS:]
    numbers = {p.compaction for p in kept.points if p.compaction is not None}
    assert min(numbers) == kept.first and max(numbers) == compactions


def test_the_ledger_is_the_same_however_the_log_was_read(tmp_path: Path) -> None:
    events = long_session(MAX_COMPACTIONS * 2 + 10, 1)
    path = _log(tmp_path, events)
    at_once = _fold(path)
    pieces = fold_in_pieces(path.read_bytes(), 3, tmp_path)
    assert pieces.ledger == at_once.ledger
    assert len(at_once.ledger.compactions) == MAX_COMPACTIONS


def test_a_session_ten_times_as_long_keeps_about_as_much(tmp_path: Path) -> None:
    """The fold state of a session of 1,000 folds and of one of 10,000, pickled: the
    longer costs a few percent more (its numbers are longer), not ten times as much. The
    shorter is already past every cap (:data:`MAX_COMPACTIONS` folds, 256 steps' paces, 240
    pressure points), so what the longer keeps more grows with its length: about a fifth
    of a byte a step over its 18,000 more steps would fail this."""
    day = _fold(_log(tmp_path, long_session(2_000, 2), "day"))
    year = _fold(_log(tmp_path, long_session(20_000, 2), "year"))
    assert year.ledger.earlier.compactions > 9 * day.ledger.earlier.compactions > 0

    def size(tracker: SessionTracker) -> int:
        return len(pickle.dumps((tracker.meter, tracker.ledger, tracker.pace, tracker.told)))

    assert size(year) < size(day) * 1.2, (size(day), size(year))


def test_a_log_with_endless_problems_keeps_the_first_few(tmp_path: Path) -> None:
    bad = [
        user_message(seq, "x", {"op": "replace", "startSeq": 10**9, "endSeq": 10**9 + 1})
        for seq in range(1, 5_001)
    ]
    tracker = _fold(_log(tmp_path, bad))
    assert len(tracker.meter.problems) == MAX_PROBLEMS
    assert tracker.meter.more_problems == 5_000 - MAX_PROBLEMS
    shot = take_snapshot(tracker, home=tmp_path, live=False, engine=EngineConfig())
    assert shot.errors[-1] == f"… and {5_000 - MAX_PROBLEMS:,} more problems"
    assert shot.errors[0].startswith("seq 1: replace")
