"""Replay a recorded DSH session log into a session folder, frame by frame, as DSH writes it.

The demo's writer (:mod:`dshweb.demo.home` runs it), not part of the core: the core only
ever reads a DSH home, and this writes one.

A :class:`Recording` is a source log cut at its frame boundaries: frame 0 holds the
header line (its ``id`` may be rewritten, the frame recompressed like DSH: checksum, no
content size), every later frame one recorded append batch, kept as recorded.

Delays. DSH writes a frame once its last event has happened (a batch is flushed 200 ms
after its first event, or at an explicit flush), so a frame's *time* is the ``time`` of
its last event (a frame without a timed event takes the previous frame's time). The
delay before frame ``k`` is ``time(k) − time(k−1)``, clamped to ``[0, max_delay]``: a
long pause in the recording plays as ``max_delay``. The header frame and the first
event frame appear together, so both have delay 0.

Writing (DSH_FACTS §2). :class:`ReplayWriter` makes the log appear atomically with the
header frame and the first event frame (a ``*.tmp`` file in the same folder, fsync, then
``os.link`` to the log's name, or ``os.replace`` when a log is already there, which is
how every later loop starts over: a reader sees a replaced file and reads it again from
the start). Every later frame is appended on its own (``O_APPEND``, one write, fsync).
By default the events' ``time`` (and the header's ``createdAt``) are moved so that a
frame's last event reads as the moment it is written, its other events keeping their
recorded spacing; that frame is then recompressed. :func:`play_recording` loops until a
stop event is set, holding a replay lock of its own (``.dshweb-replay.lock`` in the
session folder; never the lock file DSH owns) so two processes never replay into the
same file. While it is held the replayed session shows live, as a session DSH writes
does (:data:`~dshweb.core.log.home.REPLAY_LOCK_NAME`). It only waits
through the ``wait`` it is given (``threading.Event.wait`` by default), never spins.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from dshweb.core.errors import DshError, LogError
from dshweb.core.log.frames import split_frames
from dshweb.core.log.home import REPLAY_LOCK_NAME, encode_segment, project_folder


class ReplayError(DshError):
    """A recorded session cannot be replayed into its target folder."""


class ReplayBusyError(ReplayError):
    """Another process already replays into this session (it holds the replay's own
    lock, :data:`~dshweb.core.log.home.REPLAY_LOCK_NAME`; DSH's ``session.lock`` is never taken)."""


LOG_NAME = "session.v4.jsonl.zstd"
MAX_DELAY = 5.0
"""Seconds: the longest wait between two frames; longer recorded pauses are cut to it."""
LOOP_PAUSE = 5.0
"""Seconds the finished replay stays on screen before it starts over."""

Wait = Callable[[float], bool]
"""Sleeps up to the given seconds; True when the replay must stop (``Event.wait``)."""
Clock = Callable[[], float]
"""Wall-clock seconds since the epoch (``time.time``)."""


def _compress(text: bytes) -> bytes:
    """One frame like DSH's: checksum, no content size. (A compressor per call: they
    must not be shared between threads, and a frame a second costs nothing.)"""
    compressor = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=False)
    return compressor.compress(text)


# Every v4 event line starts {"type":"…","seq":N,"time":T: only T is ever rewritten, so
# the rest of each line (and so every price) stays byte for byte as recorded.
_EVENT_TIME = re.compile(rb'^(\{"type":"(?:[^"\\]|\\.)*","seq":\d+,"time":)(\d+)')


@dataclass(frozen=True, slots=True)
class ReplayFrame:
    """One frame of a recording."""

    data: bytes
    """The compressed frame as the replay writes it when times are not moved."""
    text: bytes
    """Its decoded lines."""
    time: int | None
    """Epoch ms of its last event, when DSH could have written it (a frame without one:
    the previous frame's; the header frame: None)."""
    delay: float
    """Seconds to wait after the previous frame before writing this one."""


@dataclass(frozen=True, slots=True)
class Recording:
    header: dict[str, Any]
    frames: tuple[ReplayFrame, ...]
    """Frame 0 is the header frame; there is always at least one event frame."""

    @property
    def session_id(self) -> str:
        return str(self.header.get("id", ""))

    @property
    def duration(self) -> float:
        """Seconds one play takes from the log's appearance to its last frame."""
        return sum(frame.delay for frame in self.frames)


def frame_delays(times: Sequence[int | None], *, max_delay: float = MAX_DELAY) -> tuple[float, ...]:
    """The delay before each frame, given each frame's time (see the module docstring)."""
    delays: list[float] = []
    previous: int | None = None
    for index, current in enumerate(times):
        if current is None:
            current = previous
        gap = 0.0 if index < 2 or current is None or previous is None else current - previous
        delays.append(min(max_delay, max(0.0, gap / 1000)))
        previous = current
    return tuple(delays)


def load_recording(
    source: bytes, *, session_id: str | None = None, max_delay: float = MAX_DELAY
) -> Recording:
    """Cut a complete source log into frames; ``session_id`` rewrites the header's ``id``.

    Raises :class:`LogError` unless the source is a header frame followed by at least
    one frame of events, all complete.
    """
    chunks, error = split_frames(source, 0)
    if error is not None:
        raise error
    end = chunks[-1].end if chunks else 0
    if end != len(source):
        raise LogError("the recording ends in an incomplete frame", offset=end)
    if len(chunks) < 2:
        raise LogError("a recording needs a header frame and an event frame", offset=0)
    header = _header(chunks[0].text)
    if session_id is not None:
        header = {**header, "id": session_id}
    header_text = _dumps(header)
    texts = [header_text, *(chunk.text for chunk in chunks[1:])]
    compressed = [_compress(header_text)]
    compressed.extend(source[chunk.offset : chunk.end] for chunk in chunks[1:])
    times = [None, *(_last_time(text) for text in texts[1:])]
    delays = frame_delays(times, max_delay=max_delay)
    frames = tuple(
        ReplayFrame(data, text, t, delay)
        for data, text, t, delay in zip(compressed, texts, _carry(times), delays, strict=True)
    )
    return Recording(header, frames)


def replay_dir(home: Path, recording: Recording) -> Path:
    """Where DSH would keep the recorded session in ``home``."""
    cwd = recording.header.get("cwd")
    return (
        home
        / "sessions"
        / project_folder(cwd if isinstance(cwd, str) else None)
        / encode_segment(recording.session_id)
    )


def _header(text: bytes) -> dict[str, Any]:
    try:
        header = json.loads(text)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("type") != "session":
        raise LogError("the recording's first frame is not a session header", offset=0)
    return header


def _dumps(record: dict[str, Any]) -> bytes:
    # JSON.stringify's shape: no spaces, key order kept, non-ASCII as is.
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _event_times(text: bytes) -> Iterator[int]:
    for line in text.splitlines():
        match = _EVENT_TIME.match(line)
        if match is not None:
            yield int(match[2])


def _last_time(text: bytes) -> int | None:
    return max(_event_times(text), default=None)


def _carry(times: Sequence[int | None]) -> list[int | None]:
    carried: list[int | None] = []
    for current in times:
        carried.append(current if current is not None else (carried[-1] if carried else None))
    return carried


def _shift_times(text: bytes, shift: int) -> bytes:
    def moved(line: bytes) -> bytes:
        match = _EVENT_TIME.match(line)
        if match is None:
            return line
        return match[1] + str(int(match[2]) + shift).encode() + line[match.end() :]

    return b"".join(moved(line) for line in text.splitlines(keepends=True))


class ReplayWriter:
    """Writes one play of a recording into ``session_dir``: :meth:`begin`, then
    :meth:`step` until :attr:`done`. Waiting between frames is the caller's business."""

    def __init__(
        self,
        recording: Recording,
        session_dir: Path,
        *,
        move_times: bool = True,
        clock: Clock = time.time,
    ) -> None:
        self.recording = recording
        self.session_dir = session_dir
        self.path = session_dir / LOG_NAME
        self.move_times = move_times
        self.clock = clock
        self.written = 0
        """Frames of the recording in the log (the header frame included)."""
        self.plays = 0
        self._identity: tuple[int, int, int] | None = None  # device, inode, size

    @property
    def done(self) -> bool:
        return self.written >= len(self.recording.frames)

    @property
    def next_delay(self) -> float:
        """Seconds to wait before the next :meth:`step` (0 when done)."""
        return 0.0 if self.done else self.recording.frames[self.written].delay

    def begin(self) -> None:
        """Make the log appear (or start over) with the header and first event frame."""
        self.session_dir.mkdir(parents=True, exist_ok=True)
        frames = self.recording.frames
        shift = self._shift(frames[1])
        header = self.recording.header
        created = header.get("createdAt")
        if shift and isinstance(created, int):
            header = {**header, "createdAt": created + shift}
        first = _compress(_dumps(header)) if shift else frames[0].data
        temp = self.session_dir / f"{LOG_NAME}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with temp.open("wb") as handle:
                handle.write(first + self._frame_bytes(frames[1], shift))
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temp, self.path)
            except FileExistsError:
                os.replace(temp, self.path)
        finally:
            temp.unlink(missing_ok=True)
        _fsync_dir(self.session_dir)
        st = os.stat(self.path)
        self._identity = (st.st_dev, st.st_ino, st.st_size)
        self.written = 2
        self.plays += 1

    def step(self) -> None:
        """Append the next frame (one write, fsync), unless the log is no longer the one
        this writer made (gone, replaced or changed in size): :class:`ReplayError`."""
        if self._identity is None or self.done:
            raise ReplayError("nothing to append: begin() first, or the play is over")
        frame = self.recording.frames[self.written]
        data = self._frame_bytes(frame, self._shift(frame))
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError as error:
            raise ReplayError(f"the replay's log is gone: {error.strerror}") from error
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino, st.st_size) != self._identity:
                raise ReplayError("the replay's log was changed by someone else")
            written = os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._identity = (st.st_dev, st.st_ino, st.st_size + written)
        if written != len(data):
            raise ReplayError(f"short write: {written} of {len(data)} bytes")
        self.written += 1

    def _shift(self, frame: ReplayFrame) -> int:
        if not self.move_times or frame.time is None:
            return 0
        return round(self.clock() * 1000) - frame.time

    @staticmethod
    def _frame_bytes(frame: ReplayFrame, shift: int) -> bytes:
        return _compress(_shift_times(frame.text, shift)) if shift else frame.data


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def replay_lock(session_dir: Path) -> Iterator[None]:
    """Hold this replay's own lock file (non-blocking), never the one DSH owns.

    Raises :class:`ReplayBusyError` when another process (or replay) holds it.
    """
    session_dir.mkdir(parents=True, exist_ok=True)
    path = session_dir / REPLAY_LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            raise ReplayBusyError(f"{path} is held by another process") from error
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the flock


def play_recording(
    recording: Recording,
    session_dir: Path,
    stop: threading.Event,
    *,
    wait: Wait | None = None,
    clock: Clock = time.time,
    loop_pause: float = LOOP_PAUSE,
    plays: int | None = None,
    move_times: bool = True,
) -> ReplayWriter:
    """Play ``recording`` into ``session_dir`` over and over until ``stop`` is set (or
    ``plays`` plays are done), at the recorded pace; returns the writer.

    ``wait(seconds)`` sleeps and says whether to stop (default ``stop.wait``); between
    two plays it waits ``loop_pause`` seconds (at least 0.1, so an empty wait cannot
    spin). Errors (:class:`ReplayError`, ``OSError``) propagate to the caller.
    """
    sleep = stop.wait if wait is None else wait
    writer = ReplayWriter(recording, session_dir, move_times=move_times, clock=clock)
    with replay_lock(session_dir):
        while not stop.is_set():
            writer.begin()
            while not writer.done:
                if sleep(writer.next_delay):
                    return writer
                writer.step()
            if plays is not None and writer.plays >= plays:
                return writer
            if sleep(max(0.1, loop_pause)):
                return writer
    return writer
