"""The frames a growing session is fed: a real DSH log, then the same events again.

:class:`Feed` gives a source log's frames from ``start`` on, then the same frames again
and again with every ``seq`` (and every ``*Seq``/``*Seqs`` reference) moved past the
last one and every id made new, so a session grows for as long as asked and still
reads as one consistent log (``live_bench`` folds each grown log again to check).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard
from bench_server import BenchError
from scale_home import BIG_HOME, FIXTURES

from dshweb.core.log.frames import split_frames
from dshweb.core.log.home import session_logs

ID_KEYS = frozenset({"id", "callId", "toolCallId", "rootCallId", "jobId", "compactionId"})
_compress = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compress


def source_log(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    if BIG_HOME.is_dir() and (logs := session_logs(BIG_HOME)):
        return max((log.path for log in logs), key=lambda p: p.stat().st_size)
    home = FIXTURES / "auto-compact"
    return session_logs(home)[0].path


@dataclass(frozen=True, slots=True)
class Frame:
    data: bytes
    text: bytes
    last_seq: int


def read_frames(log: Path) -> list[Frame]:
    """Every frame of a real log, with the last seq in it."""
    data = log.read_bytes()
    chunks, error = split_frames(data, 0)
    if error is not None:
        raise BenchError(f"{log} does not split into frames: {error}")
    out, last = [], -1
    for chunk in chunks:
        for line in chunk.text.splitlines():
            seq = json.loads(line).get("seq")
            last = seq if isinstance(seq, int) else last
        out.append(Frame(data[chunk.offset : chunk.end], chunk.text, last))
    return out


def _shift(value: Any, offset: int, tag: str, key: str = "") -> Any:
    """``value`` with every seq (``seq``, ``*Seq``, ``*Seqs``) moved by ``offset`` and
    every id suffixed with ``tag``: the same events, later in the same session."""
    if isinstance(value, dict):
        return {k: _shift(v, offset, tag, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift(v, offset, tag, key) for v in value]
    is_seq = key == "seq" or key.endswith(("Seq", "Seqs"))
    if is_seq and isinstance(value, int) and not isinstance(value, bool):
        return value + offset
    if key in ID_KEYS and isinstance(value, str):
        return value + tag
    return value


class Feed:
    """The frames a growing session appends: the source from ``start``, then the same
    frames again and again with later seqs and new ids (each cycle built once)."""

    def __init__(self, frames: list[Frame], start: int) -> None:
        self.unit = frames[start:]
        if not self.unit:
            raise BenchError("the source log has no frames after its first half")
        first = min(
            json.loads(line)["seq"]
            for frame in self.unit
            for line in frame.text.splitlines()
            if isinstance(json.loads(line).get("seq"), int)
        )
        self.span = frames[-1].last_seq + 1 - first
        self.cycles: dict[int, list[Frame]] = {0: self.unit}
        self.lock = threading.Lock()

    def cycle(self, k: int) -> list[Frame]:
        with self.lock:
            if k not in self.cycles:
                self.cycles[k] = [self._moved(f, k) for f in self.unit]
            return self.cycles[k]

    def _moved(self, frame: Frame, k: int) -> Frame:
        lines = [
            json.dumps(
                _shift(json.loads(line), k * self.span, f"~c{k}"),
                ensure_ascii=False,
                separators=(",", ":"),
            )
            for line in frame.text.splitlines()
        ]
        text = ("\n".join(lines) + "\n").encode()
        return Frame(_compress(text), text, frame.last_seq + k * self.span)

    def frames(self) -> Iterator[Frame]:
        for k in range(1_000_000):  # bounded: far more than any window writes
            yield from self.cycle(k)


def with_id(header_frame: bytes, session_id: str) -> bytes:
    line = json.loads(zstandard.ZstdDecompressor().decompressobj().decompress(header_frame))
    line["id"] = session_id
    return _compress(json.dumps(line, separators=(",", ":")).encode() + b"\n")


def session_log(home: Path, session_id: str) -> Path:
    folder = home / "sessions" / "--bench-grow--" / session_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "session.lock").touch()
    return folder / "session.v4.jsonl.zstd"
