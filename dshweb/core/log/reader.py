"""Follow one session log from a byte offset and fold new events as they are decoded.

:class:`LogTail` remembers which file it reads (by device and inode) and the offset of
the first byte not yet consumed. ``read()`` streams what was appended since the last
call: it reads the file in pieces of :data:`READ_SIZE`, decodes each complete frame (or
complete line of a plain ``.jsonl`` log) on its own, and hands each event to the caller
at once as a wire record (:mod:`dshweb.core.log.wire`). Neither the file nor its decoded
text is ever held whole: memory stays at a piece, a frame and a line, whatever the size
of the log. A file that shrank or was replaced calls ``on_reset`` first so the caller
can start its fold again; a corrupt frame or line stops the tail there with a
:class:`LogError` naming its byte offset and seq.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

import zstandard

from dshweb.core.errors import LogError
from dshweb.core.log.decode import LineError, decode_event
from dshweb.core.log.frames import ZSTD_MAGIC, frame_spans, frame_text
from dshweb.core.log.jsjson import loads_js
from dshweb.core.log.wire import PACKED_TYPES, AnyEvent, Other

READ_SIZE = 1 << 20
"""Bytes read from the file at a time."""
MAX_LINE = 64 << 20
"""The longest line read (the longest real DSH line known is about 5 MB)."""
MAX_FRAME = 1 << 30
"""The most one frame may decode to (a migration writes a whole log as one frame)."""
MAX_FRAME_BYTES = 256 << 20
"""The largest compressed frame read."""

Header = dict[str, Any]
OnEvent = Callable[[AnyEvent], object]


@dataclass(slots=True)
class Batch:
    """What one ``read()`` found."""

    reset: bool = False
    header: Header | None = None
    events: int = 0
    error: LogError | None = None


def expand_packed(row: dict[str, Any]) -> Iterator[Other]:
    """The stream-chunk events a v0/v1 packed row stands for, one per chunk."""
    seq0, time, deltas = row.get("seq0"), row.get("time0"), row.get("dt")
    if not isinstance(seq0, int):
        return
    if not isinstance(deltas, list) or not all(isinstance(d, int) for d in deltas):
        deltas = []  # not what DSH writes: the row stands for one chunk
    kind = str(row["type"]).removesuffix("s")
    for index in range(len(deltas) + 1):
        if index and isinstance(time, int):
            time += deltas[index - 1]
        yield Other(type=kind, seq=seq0 + index, time=time if isinstance(time, int) else None)


class _Stop(Exception):
    """A bad line: the tail stops at the start of the frame (or line) holding it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _too_long() -> str:
    return f"line longer than {MAX_LINE >> 20} MiB (the limit)"


def _split_lines(
    pieces: Iterable[bytes], *, tail: bool, limit: int | None = None
) -> Iterator[bytes]:
    """The newline-terminated lines of a stream of pieces, then (with ``tail``) whatever
    follows the last newline. Stops with :class:`_Stop` past ``limit`` bytes in all, or at
    a line longer than :data:`MAX_LINE`, before holding more of it."""
    carry = b""
    total = 0
    for piece in pieces:
        total += len(piece)
        if limit is not None and total > limit:
            raise _Stop(f"frame decodes to more than {limit >> 20} MiB (the limit)")
        lines = (carry + piece).split(b"\n")
        carry = lines.pop()
        for line in lines:  # the complete lines first, then what is held back
            if len(line) > MAX_LINE:
                raise _Stop(_too_long())
            yield line
        if len(carry) > MAX_LINE:
            raise _Stop(_too_long())
    if tail:
        yield carry


def _whole(line: bytes) -> dict[str, Any]:
    """Every field of a line (the header, a packed row), as the stdlib path reads it."""
    try:
        record = loads_js(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise _Stop("malformed JSON line") from None
    if not isinstance(record, dict):
        raise _Stop("line is not an event object")
    return record


@dataclass(slots=True)
class LogTail:
    path: Path
    compressed: bool
    offset: int = 0
    identity: tuple[int, int] | None = None
    next_seq: int = 0
    error: LogError | None = None

    def read(self, on_event: OnEvent, on_reset: Callable[[], object]) -> Batch:
        batch = Batch()
        try:
            # Never block: a FIFO (or a device) named like a log would stall a plain open.
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as handle:
                st = os.fstat(fd)
                identity = (st.st_dev, st.st_ino)
                if not stat.S_ISREG(st.st_mode):
                    if identity != self.identity:
                        self.identity, self.offset, self.next_seq = identity, 0, 0
                    batch.error = LogError("not a regular file", offset=0)
                    self.error = batch.error
                    return batch
                if identity != self.identity or st.st_size < self.offset:
                    if self.identity is not None:
                        batch.reset = True
                        on_reset()
                    self.identity, self.offset, self.next_seq, self.error = identity, 0, 0, None
                if self.error is not None or st.st_size == self.offset:
                    return batch
                handle.seek(self.offset)
                if self.compressed:
                    self._read_frames(handle, on_event, batch)
                else:
                    self._read_lines(handle, on_event, batch)
        except OSError as error:
            batch.error = LogError(f"cannot read log: {error.strerror}", offset=self.offset)
            return batch
        self.error = batch.error
        return batch

    # -- containers ---------------------------------------------------------------------

    def _read_frames(self, handle: IO[bytes], on_event: OnEvent, batch: Batch) -> None:
        first = self.offset == 0
        buf = bytearray()
        while True:
            piece = handle.read(READ_SIZE)
            if not piece:
                return
            buf += piece
            spans, error = frame_spans(buf, self.offset)
            for start, end, blocks in spans:
                if buf[start : start + 4] == ZSTD_MAGIC:  # else a skippable frame
                    where = self.offset + start
                    try:
                        lines = self._frame_lines(buf[start:end], blocks)
                        self._fold_lines(lines, on_event, batch, first)
                        del lines  # not held while the next frame is decoded
                    except zstandard.ZstdError as bad:
                        batch.error = LogError(f"corrupt zstd frame ({bad})", offset=where)
                    except _Stop as stop:
                        batch.error = LogError(stop.reason, offset=where, seq=self.next_seq)
                    if batch.error is not None:
                        self.offset = where
                        return
                first = False
            consumed = spans[-1][1] if spans else 0
            del buf[:consumed]
            self.offset += consumed
            if error is None and len(buf) > MAX_FRAME_BYTES:
                limit = MAX_FRAME_BYTES >> 20
                error = LogError(f"frame larger than {limit} MiB (the limit)", offset=self.offset)
            if error is not None:
                batch.error = error
                return

    @staticmethod
    def _frame_lines(frame: bytes | bytearray, blocks: int) -> Iterable[bytes]:
        """The lines of one complete frame, its decoded text let go before they are folded
        (the last line counts without its newline: the frame is complete)."""
        text = frame_text(frame, blocks)
        if isinstance(text, bytes):
            return text.split(b"\n")
        return _split_lines(text, tail=True, limit=MAX_FRAME)

    def _read_lines(self, handle: IO[bytes], on_event: OnEvent, batch: Batch) -> None:
        first = self.offset == 0
        try:  # the bytes after the last newline are not a line yet
            for line in _split_lines(iter(partial(handle.read, READ_SIZE), b""), tail=False):
                self._fold_lines((line,), on_event, batch, first)
                first = False
                self.offset += len(line) + 1
        except _Stop as stop:
            batch.error = LogError(stop.reason, offset=self.offset, seq=self.next_seq)

    # -- lines --------------------------------------------------------------------------

    def _fold_lines(
        self,
        lines: Iterable[bytes],
        on_event: OnEvent,
        batch: Batch,
        first: bool,
    ) -> None:
        for line in lines:
            if not line:
                continue
            try:
                event = decode_event(line)
            except LineError as bad:
                raise _Stop(bad.reason) from None
            if type(event) is Other:
                kind = event.type
                if kind == "session" and first and batch.header is None:
                    batch.header = _whole(line)
                    continue
                if kind in PACKED_TYPES:
                    row = _whole(line)
                    if "seq0" in row:
                        for chunk in expand_packed(row):
                            on_event(chunk)
                            batch.events += 1
                            self.next_seq = chunk.seq + 1  # type: ignore[operator]
                        continue
            on_event(event)
            batch.events += 1
            if event.seq is not None:
                self.next_seq = event.seq + 1
