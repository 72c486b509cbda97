"""Follow one session log from a byte offset and fold new events as they are parsed.

:class:`LogTail` remembers which file it reads (by device and inode) and the offset of
the first byte not yet consumed. ``read()`` decodes every complete frame (or complete
line of a plain ``.jsonl`` log) since the last call and hands each event to the caller
at once, so no batch of parsed events is ever held. A file that shrank or was replaced
calls ``on_reset`` first so the caller can start its fold again; a corrupt frame or
line stops the tail there with a :class:`LogError` naming its byte offset and seq.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from dshweb.core.errors import LogError
from dshweb.core.frames import decode_frames, frame_spans, split_frames
from dshweb.core.pricing import loads_js

PACKED_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})

Event = dict[str, Any]


@dataclass(slots=True)
class Batch:
    """What one ``read()`` found."""

    reset: bool = False
    header: Event | None = None
    events: int = 0
    error: LogError | None = None


def expand_packed(row: Event) -> Iterator[Event]:
    """The stream-chunk events a v0/v1 packed row stands for, one per chunk."""
    seq0, time = row.get("seq0"), row.get("time0", 0)
    if not isinstance(seq0, int):
        return
    deltas = row.get("dt") or []
    kind = str(row["type"]).removesuffix("s")
    for index in range(len(deltas) + 1):
        if index:
            time += deltas[index - 1]
        yield {"type": kind, "seq": seq0 + index, "time": time}


@dataclass(slots=True)
class LogTail:
    path: Path
    compressed: bool
    offset: int = 0
    identity: tuple[int, int] | None = None
    next_seq: int = 0
    error: LogError | None = None

    def read(self, on_event: Callable[[Event], object], on_reset: Callable[[], object]) -> Batch:
        batch = Batch()
        try:
            with self.path.open("rb") as handle:
                st = os.fstat(handle.fileno())
                identity = (st.st_dev, st.st_ino)
                if identity != self.identity or st.st_size < self.offset:
                    if self.identity is not None:
                        batch.reset = True
                        on_reset()
                    self.identity, self.offset, self.next_seq, self.error = identity, 0, 0, None
                if self.error is not None or st.st_size == self.offset:
                    return batch
                handle.seek(self.offset)
                data = handle.read()
        except OSError as error:
            batch.error = LogError(f"cannot read log: {error.strerror}", offset=self.offset)
            return batch
        end, text, batch.error = self._complete(data)
        bad = self._parse(text, on_event, batch)
        if bad is not None:
            end, batch.error = self._locate(data, bad)
        self.offset += end
        self.error = batch.error
        return batch

    def _complete(self, data: bytes) -> tuple[int, bytes, LogError | None]:
        """Bytes of complete frames (or lines), their decoded text, and a frame error."""
        if not self.compressed:
            end = data.rfind(b"\n") + 1
            return end, data[:end], None
        spans, error = frame_spans(data, self.offset)
        end = spans[-1][1] if spans else 0
        try:
            return end, decode_frames(data[:end]), error
        except zstandard.ZstdError:
            chunks, error = split_frames(data[:end], self.offset)
            end = chunks[-1].end - self.offset if chunks else 0
            return end, b"".join(c.text for c in chunks), error

    def _parse(self, text: bytes, on_event: Callable[[Event], object], batch: Batch) -> int | None:
        """Fold every line; the index of the first line that is not an event, if any."""
        for index, line in enumerate(text.split(b"\n")):
            if not line:
                continue
            try:
                record = loads_js(line)
            except (ValueError, UnicodeDecodeError):
                return index
            if not isinstance(record, dict) or not isinstance(record.get("type"), str):
                return index
            kind = record["type"]
            if kind == "session" and self.offset == 0 and batch.header is None:
                batch.header = record
                continue
            seq = record.get("seq")
            if kind in PACKED_TYPES and "seq0" in record:
                for event in expand_packed(record):
                    on_event(event)
                    batch.events += 1
                    seq = event["seq"]
            else:
                on_event(record)
                batch.events += 1
            if isinstance(seq, int):
                self.next_seq = seq + 1
        return None

    def _locate(self, data: bytes, bad_line: int) -> tuple[int, LogError]:
        """Where the frame (or line) holding line ``bad_line`` starts, and why it is bad."""
        if self.compressed:
            chunks, _ = split_frames(data, self.offset)
            seen = 0
            for chunk in chunks:
                count = chunk.text.count(b"\n")
                if bad_line < seen + count:
                    start, line = chunk.offset, chunk.text.split(b"\n")[bad_line - seen]
                    break
                seen += count
            else:  # pragma: no cover - the line came from one of these frames
                raise AssertionError("bad line outside every frame")
        else:
            lines = data.split(b"\n")
            start = self.offset + sum(len(x) + 1 for x in lines[:bad_line])
            line = lines[bad_line]
        try:
            loads_js(line)
            reason = "line is not an event object"
        except (ValueError, UnicodeDecodeError) as error:
            reason = f"malformed JSON line ({error})"
        return start - self.offset, LogError(reason, offset=start, seq=self.next_seq)
