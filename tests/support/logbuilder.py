"""Build session logs the way DSH writes them: one zstd frame per append batch."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import zstandard

from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.decode import event_from_dict
from dshweb.core.log.frames import split_frames
from dshweb.core.log.home import LogFile
from dshweb.core.log.wire import AnyEvent

_compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False)


def frame(*lines: dict[str, Any] | bytes) -> bytes:
    """One zstd frame holding the given lines (dicts are dumped as compact JSON)."""
    body = b"".join(
        (line if isinstance(line, bytes) else json.dumps(line, separators=(",", ":")).encode())
        + b"\n"
        for line in lines
    )
    return _compressor.compress(body)


def frames_of(path: Path) -> list[bytes]:
    """The raw bytes of every frame of a real log, in order."""
    data = path.read_bytes()
    chunks, error = split_frames(data, 0)
    assert error is None
    assert chunks[-1].end == len(data)
    return [data[c.offset : c.end] for c in chunks]


def header(session_id: str = "s-1", version: int = 4) -> dict[str, Any]:
    return {
        "type": "session",
        "version": version,
        "id": session_id,
        "createdAt": 1,
        "cwd": "/w",
        "isSeeded": False,
        "delegationDepth": 0,
    }


def event(seq: int, kind: str = "turn/start", **data: Any) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 1000 + seq, "data": data}


def fold_in_pieces(data: bytes, seed: int, folder: Path) -> SessionTracker:
    """A tracker that read ``data`` as a log appended in ~25 random byte pieces (cuts
    anywhere, mid-frame included), refreshing after each piece."""
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), k=min(25, len(data) - 1)))
    path = folder / "session.v4.jsonl.zstd"
    path.write_bytes(b"")
    tracker = SessionTracker(LogFile(path, 4, compressed=True))
    start = 0
    for cut in [*cuts, len(data)]:
        with path.open("ab") as handle:
            handle.write(data[start:cut])
        start = cut
        tracker.refresh()
    return tracker


def typed(record: Any) -> AnyEvent:
    """The wire record of an event given as a dict (a record is returned as it is)."""
    return event_from_dict(record) if isinstance(record, dict) else record


def log_records(path: Path) -> list[dict[str, Any]]:
    """Every event of a complete log as the dict DSH wrote (the header line left out)."""
    data = path.read_bytes()
    if path.suffix == ".zstd":
        chunks, error = split_frames(data, 0)
        assert error is None
        data = b"".join(c.text for c in chunks)
    lines = [json.loads(line) for line in data.splitlines() if line.strip()]
    return [line for line in lines if line.get("type") != "session"]
