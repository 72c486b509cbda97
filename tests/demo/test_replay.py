"""The demo replay (dshweb.demo.replay): frames and delays of a recording, a log written
exactly as DSH writes one, looping by replacing the file, and stopping on time.

Waiting and the wall clock are injected (:class:`FakeClock`), so nothing here sleeps
except the one test that checks a real thread stops promptly.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import zstandard

from dshweb.core.errors import LogError
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.frames import split_frames
from dshweb.core.log.home import LogFile, is_live, locked_files, session_logs
from dshweb.core.log.reader import LogTail
from dshweb.core.log.wire import AnyEvent
from dshweb.demo.replay import (
    LOG_NAME,
    MAX_DELAY,
    Recording,
    ReplayBusyError,
    ReplayError,
    ReplayWriter,
    frame_delays,
    load_recording,
    play_recording,
    replay_dir,
)
from tests.conftest import REPO
from tests.support.logbuilder import event, frame, header, log_records

SOURCE = REPO / "dshweb" / "demo" / "replay" / "session.v4.jsonl.zstd"
START = 1_750_000_000.0


@dataclass
class FakeClock:
    """Wall clock and ``wait`` in one: waiting moves the clock, nothing sleeps."""

    now: float = START
    waits: list[float] = field(default_factory=list)
    on_wait: Callable[[], object] | None = None
    stop_after: int | None = None

    def time(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        if self.on_wait is not None:
            self.on_wait()
        return self.stop_after is not None and len(self.waits) >= self.stop_after


@pytest.fixture(scope="module")
def recording() -> Recording:
    return load_recording(SOURCE.read_bytes(), session_id="demo-live")


def _lines(text: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line]


def _events_of(path: Path) -> list[dict[str, Any]]:
    """Every event in a log, whole; dshweb's own reader finds the same ones in order."""
    events: list[AnyEvent] = []
    tail = LogTail(path, compressed=True)
    batch = tail.read(events.append, lambda: None)
    assert batch.error is None
    found = log_records(path)
    assert [(e.kind, e.seq, e.time) for e in events] == [
        (e["type"], e["seq"], e["time"]) for e in found
    ]
    return found


def _tracker(path: Path) -> SessionTracker:
    tracker = SessionTracker(LogFile(path, 4, compressed=True))
    tracker.refresh()
    return tracker


def _state(tracker: SessionTracker) -> dict[str, Any]:
    meter, activity = tracker.meter, tracker.activity
    return {
        "host": meter.host_state(),
        "events": meter.events,
        "last_seq": meter.last_seq,
        "compactions": tracker.ledger.result(meter).summaries,
        "prunes": tracker.ledger.result(meter).prunes,
        "turns": activity.turns,
        "header": tracker.header,
        "error": tracker.error,
        "problems": list(meter.problems),
    }


def _small(*times: int, gap_events: int = 1) -> Recording:
    """A recording of one header frame and one frame per time (``gap_events`` each)."""
    frames = [frame(header("small"))]
    seq = 0
    for at in times:
        batch = []
        for _ in range(gap_events):
            batch.append(event(seq) | {"time": at})
            seq += 1
        frames.append(frame(*batch))
    return load_recording(b"".join(frames))


# --- the recording ----------------------------------------------------------------------


def test_frames_are_the_source_frames(recording: Recording) -> None:
    source = SOURCE.read_bytes()
    chunks, error = split_frames(source, 0)
    assert error is None
    assert len(recording.frames) == len(chunks) >= 10
    original_header = _lines(chunks[0].text)[0]
    assert recording.header == original_header | {"id": "demo-live"}
    assert _lines(recording.frames[0].text) == [recording.header]
    for ours, theirs in zip(recording.frames[1:], chunks[1:], strict=True):
        assert _lines(ours.text) == _lines(theirs.text)
        assert ours.data == source[theirs.offset : theirs.end]


def test_header_frame_is_one_frame_like_dsh(recording: Recording) -> None:
    data = recording.frames[0].data
    params = zstandard.get_frame_parameters(data)
    assert params.has_checksum
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN
    chunks, error = split_frames(data, 0)
    assert error is None and len(chunks) == 1 and chunks[0].end == len(data)


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        ([None, 1000], (0.0, 0.0)),
        ([None, 1000, 1500, 4000], (0.0, 0.0, 0.5, 2.5)),
        ([None, 1000, 9000], (0.0, 0.0, MAX_DELAY)),  # an 8 s pause plays as 5 s
        ([None, 1000, None, 1200], (0.0, 0.0, 0.0, 0.2)),  # no event: previous time
        ([None, 5000, 4000, 4500], (0.0, 0.0, 0.0, 0.5)),  # time going back: no wait
        ([None, 1000, 60_000], (0.0, 0.0, MAX_DELAY)),
    ],
)
def test_frame_delays(times: list[int | None], expected: tuple[float, ...]) -> None:
    assert frame_delays(times) == pytest.approx(expected)


def test_delays_follow_the_recorded_times(recording: Recording) -> None:
    last_times = [None] + [max(e["time"] for e in _lines(f.text)) for f in recording.frames[1:]]
    assert [f.time for f in recording.frames] == last_times
    for k in range(2, len(recording.frames)):
        gap = (last_times[k] or 0) - (last_times[k - 1] or 0)
        assert recording.frames[k].delay == pytest.approx(min(MAX_DELAY, max(0, gap) / 1000))
    assert recording.frames[0].delay == recording.frames[1].delay == 0
    assert 60 <= recording.duration <= 120  # the demo's recorded pace


def test_a_custom_clamp(recording: Recording) -> None:
    short = load_recording(SOURCE.read_bytes(), max_delay=0.5)
    assert max(f.delay for f in short.frames) == 0.5
    assert short.duration < recording.duration


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (b"", "header frame and an event frame"),
        (frame(header()), "header frame and an event frame"),
        (frame(event(0)) + frame(event(1)), "not a session header"),
        (frame(header()) + frame(event(0))[:-3], "incomplete frame"),
        (b"garbage!", "bad magic"),
    ],
)
def test_bad_sources_are_refused(source: bytes, reason: str) -> None:
    with pytest.raises(LogError, match=reason):
        load_recording(source)


def test_replay_dir_is_where_dsh_keeps_the_session(recording: Recording, tmp_path: Path) -> None:
    assert replay_dir(tmp_path, recording) == (
        tmp_path / "sessions" / "--tmp-dshweb-fixtures-projects-nightly-import--" / "demo-live"
    )


# --- writing ----------------------------------------------------------------------------


@pytest.mark.parametrize("count", [2, 3, 10, 40, -1])
def test_n_frames_written_read_back_exactly(
    recording: Recording, tmp_path: Path, count: int
) -> None:
    count = count if count > 0 else len(recording.frames)
    writer = ReplayWriter(recording, tmp_path, move_times=False)
    writer.begin()
    while writer.written < count:
        writer.step()
    expected = [e for f in recording.frames[1:count] for e in _lines(f.text)]
    assert _events_of(writer.path) == expected
    tracker = _tracker(writer.path)
    assert tracker.error is None
    assert tracker.meter.problems == []
    assert tracker.header == recording.header
    assert tracker.meter.events == len(expected)
    assert tracker.meter.last_seq == expected[-1]["seq"]


def test_moved_times_read_as_now(recording: Recording, tmp_path: Path) -> None:
    clock = FakeClock()
    writer = ReplayWriter(recording, tmp_path, clock=clock.time)
    writer.begin()
    written_at = [clock.now, clock.now]
    while not writer.done:
        clock.wait(writer.next_delay)
        writer.step()
        written_at.append(clock.now)
    events = _events_of(writer.path)
    originals = [e for f in recording.frames[1:] for e in _lines(f.text)]
    assert [{**e, "time": 0} for e in events] == [{**e, "time": 0} for e in originals]
    start = 0
    for k, f in enumerate(recording.frames[1:], start=1):
        batch = events[start : start + len(_lines(f.text))]
        start += len(batch)
        assert max(e["time"] for e in batch) == round(written_at[k] * 1000)
        shift = batch[0]["time"] - _lines(f.text)[0]["time"]
        assert all(
            e["time"] - o["time"] == shift for e, o in zip(batch, _lines(f.text), strict=True)
        )
    times = [e["time"] for e in events]
    assert times == sorted(times)
    tracker = _tracker(writer.path)
    assert tracker.header["createdAt"] <= times[0]
    assert tracker.header["id"] == "demo-live"
    assert _state(tracker)["host"] == _state(_replayed_unmoved(recording, tmp_path))["host"]


def _replayed_unmoved(recording: Recording, tmp_path: Path) -> SessionTracker:
    writer = ReplayWriter(recording, tmp_path / "unmoved", move_times=False)
    writer.begin()
    while not writer.done:
        writer.step()
    return _tracker(writer.path)


def test_the_log_appears_atomically_with_two_frames(
    recording: Recording, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / LOG_NAME
    seen: list[tuple[str, int, bool]] = []
    real_link, real_replace = os.link, os.replace

    def observe(name: str, real: Callable[..., None]) -> Callable[..., None]:
        def call(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if Path(dst) != target:
                real(src, dst, *args, **kwargs)
                return
            assert Path(src).name.endswith(".tmp") and Path(src).parent == tmp_path
            chunks, error = split_frames(Path(src).read_bytes(), 0)
            assert error is None and chunks[-1].end == Path(src).stat().st_size
            existed = target.exists()
            real(src, dst, *args, **kwargs)  # a refused link raises: not recorded
            seen.append((name, len(chunks), existed))

        return call

    monkeypatch.setattr(os, "link", observe("link", real_link))
    monkeypatch.setattr(os, "replace", observe("replace", real_replace))
    writer = ReplayWriter(recording, tmp_path, move_times=False)
    writer.begin()
    assert seen == [("link", 2, False)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [LOG_NAME]  # no temp left
    writer.step()
    writer.begin()  # a later play replaces the file, again with exactly two frames
    assert seen == [("link", 2, False), ("replace", 2, True)]
    assert len(split_frames(target.read_bytes(), 0)[0]) == 2


def test_a_stale_log_from_an_earlier_run_is_replaced(recording: Recording, tmp_path: Path) -> None:
    (tmp_path / LOG_NAME).write_bytes(b"left over")
    writer = ReplayWriter(recording, tmp_path, move_times=False)
    writer.begin()
    assert _tracker(writer.path).meter.events == len(_lines(recording.frames[1].text))


@pytest.mark.parametrize("how", ["deleted", "replaced", "appended"])
def test_step_refuses_a_log_taken_away(recording: Recording, tmp_path: Path, how: str) -> None:
    writer = ReplayWriter(recording, tmp_path, move_times=False)
    writer.begin()
    if how == "appended":
        with writer.path.open("ab") as handle:
            handle.write(frame(event(999)))
    else:
        writer.path.unlink()
    if how == "replaced":
        writer.path.write_bytes(b"")  # may even reuse the freed inode
    with pytest.raises(ReplayError):
        writer.step()
    if how == "deleted":
        assert not writer.path.exists()  # never recreated without its header


def test_step_before_begin_is_an_error(recording: Recording, tmp_path: Path) -> None:
    with pytest.raises(ReplayError):
        ReplayWriter(recording, tmp_path).step()


# --- playing ------------------------------------------------------------------------------


def test_looping_replaces_the_file_and_a_follower_starts_over(
    recording: Recording, tmp_path: Path
) -> None:
    session_dir = tmp_path / "s"
    path = session_dir / LOG_NAME
    follower: list[SessionTracker] = []
    inodes: list[int] = []
    resets: list[bool] = []

    def observe() -> None:
        if not path.exists():
            return
        inodes.append(path.stat().st_ino)
        if not follower:
            follower.append(SessionTracker(LogFile(path, 4, compressed=True)))
        before = follower[0].tail.identity
        follower[0].refresh()
        resets.append(before is not None and before != follower[0].tail.identity)
        assert follower[0].error is None

    clock = FakeClock(on_wait=observe)
    stop = threading.Event()
    writer = play_recording(
        recording, session_dir, stop, wait=clock.wait, clock=clock.time, plays=2, loop_pause=3
    )
    assert writer.plays == 2 and writer.done
    assert len(set(inodes)) == 2  # one file per play
    assert resets.count(True) == 1
    frames = len(recording.frames)
    assert clock.waits.count(3) == 1 and len(clock.waits) == 2 * (frames - 2) + 1
    assert clock.now - START == pytest.approx(2 * recording.duration + 3)
    follower[0].refresh()
    assert _state(follower[0]) == _state(_tracker(path))
    assert _state(follower[0])["compactions"] >= 2 and _state(follower[0])["prunes"] >= 1


def test_one_replay_per_target_and_never_dsh_lock(recording: Recording, tmp_path: Path) -> None:
    """A second replay into the same folder is refused; the session shows live while it
    is replayed (by the replay's own lock) and idle after; DSH's session.lock is never
    made or taken."""
    live: list[bool] = []
    busy: list[bool] = []

    def observe() -> None:
        live.append(is_live(tmp_path, locked_files()))
        try:
            play_recording(recording, tmp_path, threading.Event(), wait=lambda s: True)
        except ReplayBusyError:
            busy.append(True)

    clock = FakeClock(on_wait=observe, stop_after=3)
    play_recording(recording, tmp_path, threading.Event(), wait=clock.wait, clock=clock.time)
    assert live == [True] * 3 and busy == [True] * 3
    assert not is_live(tmp_path, locked_files())
    assert not (tmp_path / "session.lock").exists()


def test_stop_during_a_play_stops_at_once(recording: Recording, tmp_path: Path) -> None:
    clock = FakeClock(stop_after=5)
    writer = play_recording(
        recording, tmp_path, threading.Event(), wait=clock.wait, clock=clock.time
    )
    assert writer.plays == 1 and writer.written == 2 + 4  # the fifth wait said stop


def test_no_wait_is_ever_zero_between_plays(tmp_path: Path) -> None:
    flat = _small(1000, 1000, 1000)
    clock = FakeClock(stop_after=50)
    play_recording(
        flat, tmp_path, threading.Event(), wait=clock.wait, clock=clock.time, loop_pause=0
    )
    pauses = [w for w in clock.waits if w > 0]
    assert pauses and all(w == 0.1 for w in pauses)
    assert len(clock.waits) == 50


def test_a_set_stop_ends_the_thread_promptly(tmp_path: Path) -> None:
    slow = _small(1000, 60_000, 120_000)  # two clamped 5 s gaps
    stop = threading.Event()
    done: list[ReplayWriter] = []
    thread = threading.Thread(
        target=lambda: done.append(play_recording(slow, tmp_path / "s", stop)), daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 5
    while not (tmp_path / "s" / LOG_NAME).exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    started = time.monotonic()
    stop.set()
    thread.join(2)
    assert not thread.is_alive()
    assert time.monotonic() - started < 0.5
    assert done and done[0].written == 2


def test_the_packaged_recording_is_the_fixture_session() -> None:
    """regenerate.py copies the demo-live fixture log into the package byte for byte."""
    fixture = REPO / "tests" / "fixtures" / "homes" / "demo-live"
    (log,) = session_logs(fixture)
    assert log.path.read_bytes() == SOURCE.read_bytes()
