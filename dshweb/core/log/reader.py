"""Follow one session log from a byte offset and fold new events as they are decoded.

:class:`LogTail` remembers which file it reads (by device and inode) and the offset of
the first byte not yet consumed. ``read()`` streams what was appended since the last
call: it reads the file in pieces of at most :data:`READ_SIZE`, decodes each complete
frame (or complete line of a plain ``.jsonl`` log) on its own, and hands each event to
the caller at once as a wire record (:mod:`dshweb.core.log.wire`); what follows the last
whole frame (or line) waits, its size kept as ``pending``. Neither the file nor its decoded
text is ever held whole: memory stays at a piece, a frame and a line, whatever the size
of the log. A file that shrank or was replaced calls ``on_reset`` first so the caller
can start its fold again; a corrupt frame or line stops the tail there with a
:class:`LogError` naming its byte offset and seq.

A :class:`Budget` bounds what one ``read()`` folds, in events and in decoded bytes: a
log a few kilobytes long can decode to gigabytes of newlines or to millions of tiny
events, and a caller that follows many logs on one thread must get back to the others
in good time. A read that spends its budget returns with ``Batch.more`` set, holding
the frame it stopped in part way (``mid_frame``); the next read goes on from the very
line it stopped at, so a fold read in slices equals a fold read at once.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import zstandard

from dshweb.core.errors import LogError
from dshweb.core.files import FileRefused, open_file
from dshweb.core.log.budget import UNBOUNDED as UNBOUNDED
from dshweb.core.log.budget import Budget as Budget
from dshweb.core.log.decode import LineError, decode_event
from dshweb.core.log.frames import ZSTD_MAGIC, frame_length, frame_text
from dshweb.core.log.jsjson import loads_js
from dshweb.core.log.wire import PACKED_TYPES, AnyEvent, Other
from dshweb.core.said import say

READ_SIZE = 1 << 20
"""The most bytes read from the file at a time."""
FIRST_READ = 1 << 16
"""Bytes read first by a ``read()``; each further piece twice the last, up to
:data:`READ_SIZE`. A read that a budget ends after a frame or a few lines (a tail
followed in slices) then costs about what it folds, not a mebibyte of copying."""
MAX_LINE = 64 << 20
"""The longest line read (the longest real DSH line known is about 5 MB)."""
MAX_FRAME = 1 << 30
"""The most one frame may decode to (a migration writes a whole log as one frame)."""
MAX_FRAME_BYTES = 256 << 20
"""The largest compressed frame read."""

Header = dict[str, Any]
OnEvent = Callable[[AnyEvent], object]
_BLANK_RUNS = re.compile(rb"\n{2,}")


@dataclass(slots=True)
class Batch:
    """What one ``read()`` found."""

    reset: bool = False
    header: Header | None = None
    events: int = 0
    error: LogError | None = None
    more: bool = False
    """The budget ran out: the log holds more than was folded."""


@dataclass(slots=True)
class _Held:
    """A frame folded part way: its lines not folded yet and where the frame ends."""

    lines: Iterator[bytes]
    end: int


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
    return say("line-too-long", limit=MAX_LINE >> 20)


def _squeezed(text: bytes) -> bytes:
    """``text`` with each run of blank lines made one (they are skipped anyway; a frame
    of nothing but newlines would otherwise cost a Python turn per byte)."""
    return _BLANK_RUNS.sub(b"\n", text) if b"\n\n" in text else text


def _split_lines(
    pieces: Iterable[bytes], *, tail: bool, limit: int | None = None, squeeze: bool = False
) -> Iterator[bytes]:
    """The newline-terminated lines of a stream of pieces, then (with ``tail``) whatever
    follows the last newline; with ``squeeze``, runs of blank lines as one. Stops with
    :class:`_Stop` past ``limit`` bytes in all, or at a line longer than
    :data:`MAX_LINE`, before holding more of it."""
    carry = b""
    total = 0
    for piece in pieces:
        total += len(piece)
        if limit is not None and total > limit:
            raise _Stop(say("frame-decodes-too-much", limit=limit >> 20))
        text = carry + piece
        lines = (_squeezed(text) if squeeze else text).split(b"\n")
        carry = lines.pop()
        for line in lines:  # the complete lines first, then what is held back
            if len(line) > MAX_LINE:
                raise _Stop(_too_long())
            yield line
        if len(carry) > MAX_LINE:
            raise _Stop(_too_long())
    if tail:
        yield carry


def _pieces(handle: IO[bytes]) -> Iterator[bytes]:
    """The rest of the file in pieces of :data:`FIRST_READ` bytes, then each twice the
    last, up to :data:`READ_SIZE`."""
    size = FIRST_READ
    while piece := handle.read(size):
        yield piece
        size = min(size * 2, READ_SIZE)


def _whole(line: bytes) -> dict[str, Any]:
    """Every field of a line (the header, a packed row), as the stdlib path reads it."""
    try:
        record = loads_js(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise _Stop(say("line-malformed")) from None
    if not isinstance(record, dict):
        raise _Stop(say("line-not-event"))
    return record


def open_log(path: Path) -> int:
    """A descriptor of the log at ``path`` (the caller closes it): a regular file, never a
    link, opened without waiting (:mod:`dshweb.core.files`). Raises
    :class:`FileNotFoundError` when it is gone, :class:`FileRefused` for anything else."""
    fd = open_file(path)
    if fd is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    return fd


@dataclass(slots=True)
class LogTail:
    path: Path
    compressed: bool
    offset: int = 0
    identity: tuple[int, int] | None = None
    next_seq: int = 0
    error: LogError | None = None
    _held: _Held | None = field(default=None, repr=False)
    _spent: int = field(default=0, repr=False)
    """Bytes decoded by the current ``read()``."""
    _on_header: Callable[[dict[str, Any]], object] | None = field(default=None, repr=False)
    """The current ``read()``'s ``on_header``."""
    pending: int = 0
    """Bytes the last ``read()`` found past ``offset`` that are not a whole frame (or a
    whole line) yet: a write DSH has not finished, or a tail torn by a writer that
    stopped. What was folded is as of the last whole event before them. 0 when there
    are none, or when the read stopped early (an error, a budget spent)."""

    @property
    def mid_frame(self) -> bool:
        """A frame is folded part way: ``offset`` is its start, the fold is past it."""
        return self._held is not None

    def read(
        self,
        on_event: OnEvent,
        on_reset: Callable[[], object],
        budget: Budget = UNBOUNDED,
        *,
        on_header: Callable[[dict[str, Any]], object] | None = None,
    ) -> Batch:
        """Fold what the log gained, at most ``budget`` of it; ``on_header`` is called with
        the header as soon as it is read, before the events after it. Given per read, never
        kept: a tracker's own method kept on its tail would make the tracker a reference
        cycle, which only the garbage collector frees."""
        self._on_header = on_header
        try:
            return self._read(on_event, on_reset, budget)
        finally:
            self._on_header = None

    def _read(self, on_event: OnEvent, on_reset: Callable[[], object], budget: Budget) -> Batch:
        batch = Batch()
        self._spent = 0
        self.pending = 0
        try:
            fd = open_log(self.path)
        except FileRefused as refused:  # said while it lasts; a log put back reads again
            batch.error = LogError(say("log-refused", reason=refused.reason), offset=0)
            return batch
        except OSError as error:
            batch.error = LogError(say("log-unreadable", error=error.strerror), offset=self.offset)
            return batch
        try:
            with os.fdopen(fd, "rb") as handle:
                st = os.fstat(fd)
                identity = (st.st_dev, st.st_ino)
                held_end = self._held.end if self._held is not None else 0
                if identity != self.identity or st.st_size < max(self.offset, held_end):
                    if self.identity is not None:
                        batch.reset = True
                        on_reset()
                    self.identity, self.offset, self.next_seq, self.error = identity, 0, 0, None
                    self._held = None
                if self._held is not None and not self._resume(on_event, batch, budget):
                    return batch
                if self.error is not None or batch.error is not None:
                    return batch
                if st.st_size == self.offset:
                    return batch
                handle.seek(self.offset)
                if self.compressed:
                    self._read_frames(handle, on_event, batch, budget)
                else:
                    self._read_lines(handle, on_event, batch, budget)
        except OSError as error:
            batch.error = LogError(say("log-unreadable", error=error.strerror), offset=self.offset)
            return batch
        self.error = batch.error
        return batch

    def _spent_all(self, batch: Batch, budget: Budget) -> bool:
        return batch.events >= budget.events or self._spent >= budget.bytes

    # -- containers ---------------------------------------------------------------------

    def _resume(self, on_event: OnEvent, batch: Batch, budget: Budget) -> bool:
        """Fold on in the held frame; True once it is done and the tail is past it."""
        held = self._held
        assert held is not None
        try:
            rest = self._fold_lines(held.lines, on_event, batch, False, budget)
        except zstandard.ZstdError as bad:
            batch.error = LogError(say("frame-corrupt", detail=bad), offset=self.offset)
        except _Stop as stop:
            batch.error = LogError(stop.reason, offset=self.offset, seq=self.next_seq)
        else:
            if rest is not None:
                batch.more = True
                return False
            self.offset = held.end
        self._held = None
        return batch.error is None

    def _read_frames(
        self, handle: IO[bytes], on_event: OnEvent, batch: Batch, budget: Budget
    ) -> None:
        first = self.offset == 0
        buf = bytearray()
        for piece in _pieces(handle):
            buf += piece
            # The frames are found one at a time, as they are folded: a read that spends
            # its budget after a frame looks at no header past it (the next read would
            # look again), so a slice costs its frames, not a scan of the whole piece.
            pos, error = 0, None
            while pos < len(buf):
                try:
                    found = frame_length(buf, pos, self.offset)
                except LogError as bad:
                    bad.__traceback__ = None
                    error = bad
                    break
                if found is None:
                    break
                start, end, blocks = pos, pos + found[0], found[1]
                pos = end
                if buf[start : start + 4] == ZSTD_MAGIC:  # else a skippable frame
                    where = self.offset + start
                    if self._spent_all(batch, budget):
                        self.offset, batch.more = where, True
                        return
                    try:
                        lines = self._frame_lines(buf[start:end], blocks)
                        rest = self._fold_lines(lines, on_event, batch, first, budget)
                        del lines  # not held while the next frame is decoded
                    except zstandard.ZstdError as bad:
                        batch.error = LogError(say("frame-corrupt", detail=bad), offset=where)
                    except _Stop as stop:
                        batch.error = LogError(stop.reason, offset=where, seq=self.next_seq)
                    if batch.error is not None:
                        self.offset = where
                        return
                    if rest is not None:
                        self._held = _Held(rest, end=self.offset + end)
                        self.offset, batch.more = where, True
                        return
                first = False
            del buf[:pos]
            self.offset += pos
            if error is None and len(buf) > MAX_FRAME_BYTES:
                limit = MAX_FRAME_BYTES >> 20
                error = LogError(say("frame-too-large", limit=limit), offset=self.offset)
            if error is not None:
                batch.error = error
                return
        self.pending = handle.tell() - self.offset  # read to the end: a frame not whole yet

    def _frame_lines(self, frame: bytes | bytearray, blocks: int) -> Iterator[bytes]:
        """The lines of one complete frame, its decoded text let go before they are folded
        (the last line counts without its newline: the frame is complete); the bytes
        decoded count against the read's budget as they are decoded."""
        text = frame_text(frame, blocks)
        if isinstance(text, bytes):
            self._spent += len(text)
            lines = text.split(b"\n")
            if len(lines) > len(text) >> 5:  # mostly blank lines, maybe: squeeze them
                lines = _squeezed(text).split(b"\n")
            return iter(lines)
        return _split_lines(self._counted(text), tail=True, limit=MAX_FRAME, squeeze=True)

    def _counted(self, pieces: Iterable[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            self._spent += len(piece)
            yield piece

    def _read_lines(
        self, handle: IO[bytes], on_event: OnEvent, batch: Batch, budget: Budget
    ) -> None:
        first = self.offset == 0
        try:  # the bytes after the last newline are not a line yet
            for line in _split_lines(_pieces(handle), tail=False):
                if self._spent_all(batch, budget):
                    batch.more = True
                    return
                self._fold_lines(iter((line,)), on_event, batch, first, UNBOUNDED)
                first = False
                self.offset += len(line) + 1
                self._spent += len(line) + 1
            self.pending = handle.tell() - self.offset  # read to the end: a line not whole yet
        except _Stop as stop:
            batch.error = LogError(stop.reason, offset=self.offset, seq=self.next_seq)

    # -- lines --------------------------------------------------------------------------

    def _fold_lines(
        self,
        lines: Iterator[bytes],
        on_event: OnEvent,
        batch: Batch,
        first: bool,
        budget: Budget,
    ) -> Iterator[bytes] | None:
        """Fold lines until they end (None) or the budget is spent (the lines left)."""
        decode = decode_event  # looked up once a frame, not once a line (tests patch it)
        most_events, most_bytes = budget.events, budget.bytes
        for line in lines:
            if line:
                try:
                    event = decode(line)
                except LineError as bad:
                    raise _Stop(bad.reason) from None
                if type(event) is not Other or not self._fold_other(
                    event, line, on_event, batch, first
                ):
                    on_event(event)
                    batch.events += 1
                    seq = event.seq
                    if seq is not None:
                        self.next_seq = seq + 1
            if batch.events >= most_events or self._spent >= most_bytes:
                return lines
        return None

    def _fold_other(
        self, event: Other, line: bytes, on_event: OnEvent, batch: Batch, first: bool
    ) -> bool:
        """Fold the header or a packed row (True), or leave the event to the caller."""
        if event.type == "session" and first and batch.header is None:
            batch.header = _whole(line)
            if self._on_header is not None:
                self._on_header(batch.header)
            return True
        if event.type in PACKED_TYPES:
            row = _whole(line)
            if "seq0" in row:
                for chunk in expand_packed(row):
                    on_event(chunk)
                    batch.events += 1
                    self.next_seq = chunk.seq + 1  # type: ignore[operator]
                return True
        return False
