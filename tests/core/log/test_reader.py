"""Reader robustness: torn, truncated, replaced, corrupt and odd logs, with exact outcomes."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.frames import frame_spans, split_frames
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import LogTail
from tests.conftest import CORPUS_HOME, FIXTURE_HOMES, session_log_paths
from tests.support.logbuilder import event, frame, frames_of, header


def _real_log() -> Path:
    """A real multi-frame log with compactions (fixture home, else the corpus)."""
    for home in [*sorted(FIXTURE_HOMES.glob("*")), CORPUS_HOME]:
        for path in session_log_paths(home) if (home / "sessions").is_dir() else []:
            if len(frames_of(path)) >= 10 and path.stat().st_size > 20_000:
                return path
    pytest.skip("no real multi-frame log available")


@pytest.fixture
def real_log(tmp_path: Path) -> Path:
    target = tmp_path / "sessions" / "--w--" / "s" / "session.v4.jsonl.zstd"
    target.parent.mkdir(parents=True)
    shutil.copyfile(_real_log(), target)
    return target


def _tracker(path: Path) -> SessionTracker:
    return SessionTracker(LogFile(path, 4, compressed=path.suffix == ".zstd"))


def _fold_all(path: Path) -> SessionTracker:
    tracker = _tracker(path)
    tracker.refresh()
    return tracker


def test_multi_frame_log_folds_every_event(real_log: Path) -> None:
    tracker = _fold_all(real_log)
    frames = frames_of(real_log)
    assert tracker.error is None
    assert tracker.header["type"] == "session"
    assert tracker.meter.events == tracker.meter.last_seq + 1
    assert tracker.tail.offset == sum(len(f) for f in frames)


def test_torn_last_frame_at_every_byte_is_not_yet(real_log: Path, tmp_path: Path) -> None:
    frames = frames_of(real_log)
    whole = _fold_all(real_log)
    before = _fold_all(_write(tmp_path / "before.zstd", b"".join(frames[:-1])))
    last = frames[-1]
    path = tmp_path / "grow.zstd"
    for cut in range(len(last)):
        path.write_bytes(b"".join(frames[:-1]) + last[:cut])
        tracker = _tracker(path)
        assert tracker.refresh() is True
        assert tracker.error is None, cut
        assert tracker.meter == before.meter, cut
        with path.open("ab") as handle:
            handle.write(last[cut:])
        assert tracker.refresh() is True
        assert tracker.meter == whole.meter, cut


def test_a_torn_tail_is_counted_as_pending_until_it_is_whole(
    real_log: Path, tmp_path: Path
) -> None:
    """A real log whose last frame is half on disk: what is folded is as of the frame
    before it, and the tail says how many bytes past it are not a whole frame; a refresh
    that finds only more of that frame is a change (a page says so), and once the frame
    is whole nothing is pending."""
    frames = frames_of(real_log)
    before = _fold_all(_write(tmp_path / "before.zstd", b"".join(frames[:-1])))
    assert before.tail.pending == 0
    last = frames[-1]
    path = _write(tmp_path / "torn.zstd", b"".join(frames[:-1]) + last[:10])
    tracker = _fold_all(path)
    assert (tracker.meter, tracker.tail.pending) == (before.meter, 10)
    assert tracker.refresh() is False  # the same torn tail
    with path.open("ab") as handle:
        handle.write(last[10 : len(last) // 2])
    assert tracker.refresh() is True
    assert (tracker.meter, tracker.tail.pending) == (before.meter, len(last) // 2)
    with path.open("ab") as handle:
        handle.write(last[len(last) // 2 :])
    assert tracker.refresh() is True
    assert (tracker.meter, tracker.tail.pending) == (_fold_all(real_log).meter, 0)


def test_a_plain_log_pends_the_bytes_after_its_last_newline(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    rest = b'{"type":"tu'
    path.write_bytes(b'{"type":"session","version":0,"id":"p"}\n' + rest)
    tracker = SessionTracker(LogFile(path, 0, compressed=False))
    tracker.refresh()
    assert tracker.tail.pending == len(rest)
    with path.open("ab") as handle:
        handle.write(b'rn/start","seq":0,"time":5,"data":{}}\n')
    assert tracker.refresh() is True
    assert (tracker.meter.events, tracker.tail.pending) == (1, 0)


def test_tail_grows_frame_by_frame_in_one_tracker(real_log: Path, tmp_path: Path) -> None:
    frames = frames_of(real_log)
    path = tmp_path / "live.zstd"
    path.write_bytes(frames[0])
    tracker = _tracker(path)
    tracker.refresh()
    for piece in frames[1:]:
        half = len(piece) // 2
        with path.open("ab") as handle:
            handle.write(piece[:half])
        tracker.refresh()
        with path.open("ab") as handle:
            handle.write(piece[half:])
        assert tracker.refresh() is True
    assert tracker.refresh() is False
    assert tracker.meter == _fold_all(real_log).meter


def test_shrunk_file_is_read_again_from_the_start(real_log: Path, tmp_path: Path) -> None:
    frames = frames_of(real_log)
    tracker = _fold_all(real_log)
    keep = len(frames) // 2
    with real_log.open("r+b") as handle:
        handle.truncate(sum(len(f) for f in frames[:keep]))
    assert tracker.refresh() is True
    expected = _fold_all(_write(tmp_path / "half.zstd", b"".join(frames[:keep])))
    assert tracker.meter == expected.meter
    assert tracker.error is None


def test_replaced_file_is_read_again(real_log: Path, tmp_path: Path) -> None:
    tracker = _fold_all(real_log)
    other = _write(tmp_path / "other.zstd", frame(header("other")) + frame(event(0), event(1)))
    os.replace(other, real_log)
    assert tracker.refresh() is True
    assert tracker.session_id == "other"
    assert tracker.meter.events == 2
    assert tracker.meter.last_seq == 1


def test_corrupt_checksum_stops_at_that_frame(real_log: Path, tmp_path: Path) -> None:
    frames = frames_of(real_log)
    bad_index = len(frames) // 2
    bad = bytearray(frames[bad_index])
    bad[-1] ^= 0xFF
    offset = sum(len(f) for f in frames[:bad_index])
    path = _write(
        tmp_path / "bad.zstd", b"".join([*frames[:bad_index], bytes(bad), *frames[bad_index + 1 :]])
    )
    tracker = _fold_all(path)
    expected = _fold_all(_write(tmp_path / "good.zstd", b"".join(frames[:bad_index])))
    assert tracker.meter == expected.meter
    assert tracker.error is not None
    assert tracker.error.startswith("corrupt zstd frame")
    assert f"at byte {offset}" in tracker.error
    assert tracker.refresh() is False
    assert tracker.meter == expected.meter


def test_skippable_frames_are_skipped_and_a_torn_one_is_not_yet(tmp_path: Path) -> None:
    skip = (0x184D2A5F).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"12345"
    data = frame(header()) + skip + frame(event(0)) + skip + frame(event(1))
    assert [c.end for c in split_frames(data, 0)[0]][-1] == len(data)
    path = _write(tmp_path / "s.zstd", data + skip[:9])
    tracker = _fold_all(path)
    assert (tracker.error, tracker.meter.events, tracker.tail.offset) == (None, 2, len(data))
    with path.open("ab") as handle:
        handle.write(skip[9:] + frame(event(2)))
    assert tracker.refresh() is True
    assert (tracker.error, tracker.meter.events) == (None, 3)
    assert tracker.tail.offset == path.stat().st_size


def test_garbage_appended_is_reported_at_its_offset(real_log: Path) -> None:
    tracker = _fold_all(real_log)
    good = tracker.meter.events
    size = real_log.stat().st_size
    with real_log.open("ab") as handle:
        handle.write(b"\x00garbage that is not zstd\n")
    assert tracker.refresh() is True
    assert tracker.error == f"not a zstd frame (bad magic) (at byte {size})"
    assert tracker.meter.events == good


@pytest.mark.parametrize("partial", [b"\x28", b"\x28\xb5", b"\x28\xb5\x2f"])
def test_partial_magic_is_not_yet(tmp_path: Path, partial: bytes) -> None:
    path = _write(tmp_path / "p.zstd", frame(header()) + frame(event(0)) + partial)
    tracker = _fold_all(path)
    assert tracker.error is None
    assert tracker.meter.events == 1


def test_empty_file_has_nothing_and_no_error(tmp_path: Path) -> None:
    tracker = _fold_all(_write(tmp_path / "e.zstd", b""))
    assert tracker.error is None
    assert tracker.header == {}
    assert tracker.meter.events == 0
    assert tracker.session_id == tmp_path.name


def test_bad_json_line_names_offset_and_seq(tmp_path: Path) -> None:
    first = frame(header()) + frame(event(0), event(1))
    path = _write(
        tmp_path / "j.zstd", first + frame(event(2), b'{"type":"x","seq":3,') + frame(event(4))
    )
    tracker = _fold_all(path)
    assert tracker.error is not None
    assert tracker.error.startswith("malformed JSON line")
    assert tracker.error.endswith(f"(at byte {len(first)}, seq 3)")
    assert tracker.meter.last_seq == 2
    assert tracker.meter.events == 3


def test_line_that_is_not_an_event(tmp_path: Path) -> None:
    first = frame(header())
    tracker = _fold_all(_write(tmp_path / "n.zstd", first + frame(b"[1,2]")))
    assert tracker.error == f"line is not an event object (at byte {len(first)}, seq 0)"


def test_unknown_event_types_are_skipped(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "u.zstd",
        frame(header())
        + frame(
            event(0, "some-plugin/new-thing", x=1), event(1, "request/context", contextWindow=5000)
        ),
    )
    tracker = _fold_all(path)
    assert tracker.error is None
    assert tracker.meter.events == 2
    assert tracker.meter.context_window == 5000


def test_plain_jsonl_reads_complete_lines_only(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(
        b'{"type":"session","version":0,"id":"p"}\n{"type":"turn/start","seq":0,"time":5,"data":{}}\n{"type":"tu'
    )
    tracker = SessionTracker(LogFile(path, 0, compressed=False))
    tracker.refresh()
    assert (tracker.session_id, tracker.meter.events, tracker.error) == ("p", 1, None)
    with path.open("ab") as handle:
        handle.write(b'rn/end","seq":1,"time":6,"data":{}}\n')
    assert tracker.refresh() is True
    assert (tracker.meter.last_seq, tracker.activity.last_time) == (1, 6)


def test_packed_chunk_rows_are_expanded(tmp_path: Path) -> None:
    path = tmp_path / "session.v1.jsonl"
    rows = [
        b'{"type":"session","version":1,"id":"old","seedLength":0}',
        b'{"type":"turn/start","seq":0,"time":10,"data":{"turn":1}}',
        b'{"type":"text-chunks","seq0":1,"time0":11,"dt":[1,2],"texts":["a","b","c"]}',
        b'{"type":"turn/end","seq":4,"time":20,"data":{"turn":1}}',
    ]
    path.write_bytes(b"\n".join(rows) + b"\n")
    tracker = SessionTracker(LogFile(path, 1, compressed=False))
    tracker.refresh()
    assert tracker.meter.events == 5
    assert tracker.meter.last_seq == 4
    assert tracker.tail.next_seq == 5


def test_unreadable_file_reports_and_recovers(tmp_path: Path) -> None:
    data = frame(header()) + frame(event(0))
    path = _write(tmp_path / "r.zstd", data)
    tracker = _tracker(path)
    path.unlink()
    path.mkdir()  # unreadable as a file even for root
    assert tracker.refresh() is True
    assert tracker.error == (
        "the log is a folder, not a regular file: dshweb does not read it (at byte 0)"
    )
    path.rmdir()
    _write(path, data)
    assert tracker.refresh() is True
    assert tracker.meter.events == 1
    assert not tracker.error


def test_tail_never_writes(real_log: Path) -> None:
    before = (real_log.read_bytes(), real_log.stat().st_mtime_ns)
    tail = LogTail(real_log, compressed=True)
    events: list[object] = []
    tail.read(events.append, lambda: None)
    assert len(events) > 10
    assert (real_log.read_bytes(), real_log.stat().st_mtime_ns) == before


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_many_threads_read_at_once(real_log: Path) -> None:
    """Pages, the watcher and the demo replay read in parallel threads: a shared zstd
    decompressor corrupted frames under that load."""
    expected = _fold_all(real_log).meter
    results: list[bool] = []

    def fold_often() -> None:
        for _ in range(15):
            tracker = _fold_all(real_log)
            results.append(tracker.error is None and tracker.meter == expected)

    threads = [threading.Thread(target=fold_often) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert results == [True] * 90


def test_a_large_multi_block_frame_streams_to_the_same_state(tmp_path: Path) -> None:
    """A migration writes every event as one frame of many blocks: it is decoded a piece at
    a time, and folds to the same state as the same events in small frames."""
    events = [
        event(seq, "user/message", role="user", content=[{"type": "text", "text": f"{seq} " * 900}])
        | {"surfaceOp": "append"}
        for seq in range(800)
    ]
    big = frame(*events)
    blocks = frame_spans(big, 0)[0][0][2]
    assert blocks > 8  # ≥ 2 MB of text: past the one-call size
    one = _write(tmp_path / "one.zstd", frame(header()) + big)
    many = _write(tmp_path / "many.zstd", frame(header()) + b"".join(frame(e) for e in events))
    streamed, small = _fold_all(one), _fold_all(many)
    assert streamed.error is None
    assert streamed.meter.events == 800
    assert streamed.meter == small.meter
    torn = _write(tmp_path / "torn.zstd", frame(header()) + big[: len(big) // 2])
    tracker = _fold_all(torn)
    assert (tracker.error, tracker.meter.events) == (None, 0)
    with torn.open("ab") as handle:
        handle.write(big[len(big) // 2 :])
    tracker.refresh()
    assert tracker.meter == small.meter
