"""Homes of many sessions for the tests: copies of one real fixture log, each a distinct
session (its own folder and a new ``id`` in its header, the log's first zstd frame; every
other byte is the source's)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import zstandard

from dshweb.core.log.home import LogFile, session_logs
from tests.support.logbuilder import frame, frames_of


def copy_as(home: Path, log: LogFile, session_id: str, *, frames: int | None = None) -> Path:
    """Copy ``log``'s session into ``home`` as the session ``session_id`` (its log cut
    after ``frames`` frames when given); the new log's path."""
    parts = frames_of(log.path)
    header = json.loads(zstandard.ZstdDecompressor().decompressobj().decompress(parts[0]))
    assert header["type"] == "session", "the first frame holds the header alone"
    header["id"] = session_id
    folder = home / "sessions" / log.session_dir.parent.name / session_id
    folder.mkdir(parents=True)
    shutil.copyfile(log.session_dir / "session.lock", folder / "session.lock")
    target = folder / log.path.name
    kept = parts[1:] if frames is None else parts[1:frames]
    target.write_bytes(frame(header) + b"".join(kept))
    return target


def home_of_copies(source: Path, target: Path, count: int, *, prefix: str = "copy") -> Path:
    """``target``: ``source``'s profiles and ``count`` copies of its first session's log,
    ``<prefix>-0000`` … (the same figures and times, so the list orders them by id)."""
    shutil.copytree(source / "profiles", target / "profiles")
    log = session_logs(source)[0]
    for number in range(count):
        copy_as(target, log, f"{prefix}-{number:04}")
    return target
