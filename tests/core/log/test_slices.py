"""A log read in budgeted slices (``LogTail.read(..., budget)``) folds to exactly what a
read at once folds, and no slice decodes or hands on much more than its budget."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import zstandard

from dshweb.core.fold.checkpoint import dump_checkpoint
from dshweb.core.fold.session import SessionTracker, take_snapshot
from dshweb.core.log.frames import OUT_SIZE
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import UNBOUNDED, Budget
from dshweb.core.profile.effective import EngineConfig
from tests.conftest import all_homes, session_log_paths
from tests.support.differences import differences, fail_on
from tests.support.logbuilder import event, frame, frames_of, header

LOGS = [path for home in all_homes() for path in session_log_paths(home)]
BUDGETS = [
    Budget(events=1, bytes=UNBOUNDED.bytes),
    Budget(events=7, bytes=UNBOUNDED.bytes),
    Budget(events=UNBOUNDED.events, bytes=1),
    Budget(events=UNBOUNDED.events, bytes=3_000),
    Budget(events=50, bytes=20_000),
]


def _tracker(path: Path) -> SessionTracker:
    compressed = path.suffix == ".zstd"
    return SessionTracker(LogFile(path, 4, compressed=compressed))


def _state(tracker: SessionTracker, home: Path) -> dict[str, object]:
    tail = tracker.tail
    return {
        "snapshot": take_snapshot(
            tracker, home=home, live=False, engine=EngineConfig(), largest=1 << 30
        ),
        "meter": tracker.meter,
        "activity": tracker.activity,
        "pace": tracker.pace,
        "ledger": tracker.ledger,
        "told": tracker.told,
        "header": tracker.header,
        "error": tracker.error,
        "tail": (tail.offset, tail.next_seq, str(tail.error)),
    }


def _sliced(tracker: SessionTracker, budget: Budget, most: int = 1_000_000) -> int:
    """Refresh until the log is folded to its end; the number of reads."""
    for reads in range(1, most + 1):
        tracker.refresh(budget)
        if not tracker.unfinished:
            return reads
    raise AssertionError(f"still unfinished after {most} reads")


def _whole(path: Path) -> SessionTracker:
    tracker = _tracker(path)
    tracker.refresh()
    assert not tracker.unfinished
    return tracker


def _id(path: Path) -> str:
    return f"{path.parents[3].name}/{path.parent.name}"


def test_there_are_real_logs() -> None:
    assert len(LOGS) >= 20


@pytest.mark.parametrize("path", LOGS, ids=[_id(p) for p in LOGS])
def test_every_real_log_read_in_slices_folds_as_read_at_once(path: Path, tmp_path: Path) -> None:
    """Under each of :data:`BUDGETS`, which each cut the reads, the log folds to what one
    read at once folds (folded once for all of them)."""
    whole = _state(_whole(path), tmp_path)
    found: list[str] = []
    for budget in BUDGETS:
        tracker = _tracker(path)
        if (reads := _sliced(tracker, budget)) < 2:
            found.append(f"{budget!r}: {reads} read, the budget cut nothing")
        found += [
            f"{budget!r}: {d.line('sliced', 'at once')}"
            for d in differences(_state(tracker, tmp_path), whole)
        ]
    fail_on(found, f"{_id(path)}: read in slices unlike read at once")


def test_appends_between_slices_and_mid_frame_holds(tmp_path: Path) -> None:
    """Frames appended while a frame is held part way are folded after it, in order."""
    source = max(LOGS, key=lambda p: len(frames_of(p)) if p.suffix == ".zstd" else 0)
    frames = frames_of(source)
    path = tmp_path / "session.v4.jsonl.zstd"
    path.write_bytes(b"")
    tracker = _tracker(path)
    held = 0
    for piece in frames:
        with path.open("ab") as handle:
            handle.write(piece)
        tracker.refresh(Budget(events=3, bytes=UNBOUNDED.bytes))
        held += tracker.tail.mid_frame
    assert held >= 5
    _sliced(tracker, Budget(events=3, bytes=UNBOUNDED.bytes))
    assert not tracker.tail.mid_frame
    assert path.read_bytes() == source.read_bytes()
    assert _state(tracker, tmp_path) == _state(_whole(path), tmp_path)


def _big_frame_log(path: Path, events: int) -> None:
    lines = [header(), *(event(seq, note="x" * 60) for seq in range(events))]
    path.write_bytes(frame(*lines) + frame(event(events)))


def test_a_frame_held_across_reads_keeps_its_own_decoder(tmp_path: Path) -> None:
    """A streamed frame (decoded a piece at a time) is held across reads while the same
    thread decodes other logs' frames: it must not share their decoder."""
    big = tmp_path / "big" / "session.v4.jsonl.zstd"
    big.parent.mkdir()
    _big_frame_log(big, 40_000)
    first = zstandard.ZstdDecompressor().decompressobj().decompress(frames_of(big)[0])
    assert len(first) > 2 * OUT_SIZE
    other = tmp_path / "other" / "session.v4.jsonl.zstd"
    other.parent.mkdir()
    shutil.copyfile(max(LOGS, key=lambda p: p.stat().st_size if p.suffix == ".zstd" else 0), other)
    sliced, interleaved = _tracker(big), _tracker(other)
    reads = 0
    while True:
        sliced.refresh(Budget(events=5_000, bytes=UNBOUNDED.bytes))
        reads += 1
        interleaved.tail.offset = 0  # decode the other log's frames again each time
        interleaved.refresh()
        if not sliced.unfinished:
            break
    assert reads >= 8
    assert sliced.meter.events == 40_001
    assert _state(sliced, tmp_path) == _state(_whole(big), tmp_path)


def test_a_log_of_newlines_is_read_a_bounded_slice_at_a_time(tmp_path: Path) -> None:
    """64 MiB of blank lines in a frame of a few kilobytes: every read decodes about its
    byte budget, never the whole frame, and the event after them is folded."""
    path = tmp_path / "session.v4.jsonl.zstd"
    blank = zstandard.ZstdCompressor(level=19).compress(b"\n" * (64 << 20))
    path.write_bytes(frame(header()) + blank + frame(event(0), event(1)))
    assert path.stat().st_size < 64 << 10
    tracker = _tracker(path)
    budget = Budget(events=UNBOUNDED.events, bytes=2 << 20)
    spent: list[int] = []
    while True:
        tracker.refresh(budget)
        spent.append(tracker.tail._spent)
        if not tracker.unfinished:
            break
    assert len(spent) >= 30
    assert max(spent) <= budget.bytes + OUT_SIZE
    assert tracker.meter.events == 2 and tracker.error is None


def test_a_log_of_tiny_events_hands_on_at_most_its_budget(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    tiny = [json.dumps({"type": "x", "seq": seq}).encode() for seq in range(100_000)]
    path.write_bytes(frame(header()) + frame(*tiny))
    tracker = _tracker(path)
    counts: list[int] = []
    while True:
        before = tracker.meter.events
        tracker.refresh(Budget(events=10_000, bytes=UNBOUNDED.bytes))
        counts.append(tracker.meter.events - before)
        if not tracker.unfinished:
            break
    assert counts == [10_000] * 10 or counts == [10_000] * 10 + [0]
    assert tracker.tail.next_seq == 100_000


def test_a_plain_log_read_in_slices(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl"
    lines = [header(), *(event(seq) for seq in range(100))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    tracker = _tracker(path)
    assert _sliced(tracker, Budget(events=9, bytes=UNBOUNDED.bytes)) == 12
    assert _state(tracker, tmp_path) == _state(_whole(path), tmp_path)


def test_a_log_replaced_while_a_frame_is_held_is_folded_afresh(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    _big_frame_log(path, 20_000)
    tracker = _tracker(path)
    tracker.refresh(Budget(events=1_000, bytes=UNBOUNDED.bytes))
    assert tracker.tail.mid_frame
    replacement = tmp_path / "new.zstd"
    replacement.write_bytes(frame(header(), event(0), event(1, "turn/end")))
    replacement.replace(path)
    _sliced(tracker, Budget(events=1_000, bytes=UNBOUNDED.bytes))
    assert _state(tracker, tmp_path) == _state(_whole(path), tmp_path)
    assert tracker.meter.events == 2


def test_no_checkpoint_is_taken_in_the_middle_of_a_frame(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    _big_frame_log(path, 20_000)
    tracker = _tracker(path)
    tracker.refresh(Budget(events=1_000, bytes=UNBOUNDED.bytes))
    with pytest.raises(ValueError, match="middle of a frame"):
        dump_checkpoint(tracker, key=b"k" * 32)
    _sliced(tracker, Budget(events=1_000, bytes=UNBOUNDED.bytes))
    assert dump_checkpoint(tracker, key=b"k" * 32)
