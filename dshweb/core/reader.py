"""Follow one session log from a byte offset and turn new bytes into parsed events.

:class:`LogTail` remembers which file it reads (by device and inode) and the offset of
the first byte not yet consumed. ``read()`` returns the header (once) and the events of
every complete frame or line since the last call. A file that shrank or was replaced is
reported as a reset so the caller can start its fold again; a corrupt frame or line
stops the tail there with a :class:`LogError` naming its byte offset and seq.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dshweb.core.errors import LogError
from dshweb.core.frames import Chunk, split_frames, split_lines
from dshweb.core.pricing import loads_js

PACKED_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})


@dataclass(slots=True)
class Batch:
    """What one ``read()`` found: events in order, and whether the file started over."""

    reset: bool = False
    header: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    error: LogError | None = None


def expand_packed(row: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The stream-chunk events a v0/v1 packed row stands for, one per chunk."""
    seq0, time0 = row.get("seq0"), row.get("time0", 0)
    if not isinstance(seq0, int):
        return
    deltas = row.get("dt") or []
    kind = str(row["type"]).removesuffix("s")
    time = time0
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

    def read(self) -> Batch:
        batch = Batch()
        try:
            with self.path.open("rb") as handle:
                st = os.fstat(handle.fileno())
                identity = (st.st_dev, st.st_ino)
                if identity != self.identity or st.st_size < self.offset:
                    batch.reset = self.identity is not None
                    self.identity, self.offset, self.next_seq, self.error = identity, 0, 0, None
                if self.error is not None or st.st_size == self.offset:
                    return batch
                handle.seek(self.offset)
                data = handle.read()
        except OSError as error:
            batch.error = LogError(f"cannot read log: {error.strerror}", offset=self.offset)
            return batch
        if self.compressed:
            chunks, batch.error = split_frames(data, self.offset)
        else:
            chunks = split_lines(data, self.offset)
        for chunk in chunks:
            if not self._parse(chunk, batch):
                break
            self.offset = chunk.end
        self.error = batch.error
        return batch

    def _parse(self, chunk: Chunk, batch: Batch) -> bool:
        try:
            # A frame's lines are JSON values with no raw newline inside: one decode call
            # for the whole frame is much cheaper than one per line.
            body = chunk.text.decode().rstrip("\n").replace("\n", ",")
            records = loads_js(f"[{body}]") if body else []
        except (ValueError, UnicodeDecodeError):
            records = None
        if records is None:
            return self._parse_lines(chunk, batch)
        return all(self._add(record, chunk, batch) for record in records)

    def _parse_lines(self, chunk: Chunk, batch: Batch) -> bool:
        """Line by line, to name the first line that is not JSON."""
        for line in chunk.text.split(b"\n"):
            if not line.strip():
                continue
            try:
                record = loads_js(line)
            except (ValueError, UnicodeDecodeError) as error:
                batch.error = LogError(
                    f"malformed JSON line ({error})", offset=chunk.offset, seq=self.next_seq
                )
                return False
            if not self._add(record, chunk, batch):
                return False
        return True

    def _add(self, record: Any, chunk: Chunk, batch: Batch) -> bool:
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            batch.error = LogError(
                "line is not an event object", offset=chunk.offset, seq=self.next_seq
            )
            return False
        if record["type"] == "session" and self.offset == 0 and batch.header is None:
            batch.header = record
            return True
        if record["type"] in PACKED_TYPES and "seq0" in record:
            batch.events.extend(expand_packed(record))
        else:
            batch.events.append(record)
        seq = batch.events[-1].get("seq") if batch.events else None
        if isinstance(seq, int):
            self.next_seq = seq + 1
        return True
