"""One bad file never takes the home down: FIFOs, decompression bombs, huge lines and
frames, and profile patches DSH would refuse, each in a real home."""

from __future__ import annotations

import os
import threading
import tracemalloc
from pathlib import Path

import pytest
import zstandard

from dshweb.core.fold.index import HomeIndex
from dshweb.core.log import frames, reader
from dshweb.core.log.home import newest_log
from dshweb.core.log.reader import LogTail
from tests.conftest import FIXTURE_HOMES
from tests.support.logbuilder import event, frame, header

GOOD = FIXTURE_HOMES / "plain-turns"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    for log in (GOOD / "sessions").glob("*/*/session.v4.jsonl.zstd"):
        target = home / log.relative_to(GOOD)
        target.parent.mkdir(parents=True)
        target.write_bytes(log.read_bytes())
    return home


def _refresh_within(index: HomeIndex, seconds: float = 10.0) -> None:
    done = threading.Event()

    def run() -> None:
        index.refresh()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(seconds), "refresh blocked"


def test_a_fifo_named_like_a_log_is_not_a_log(tmp_path: Path) -> None:
    home = _home(tmp_path)
    folder = home / "sessions" / "--w--" / "fifo"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "session.v4.jsonl.zstd")
    assert newest_log(folder) is None
    index = HomeIndex(home)
    _refresh_within(index)  # a plain open() of the FIFO would block here for ever
    assert [t.session_id for t in index.trackers.values()] == ["plain-turns"]
    # a log replaced by a FIFO after it was found: reported, never opened for a blocking read
    tail = LogTail(folder / "session.v4.jsonl.zstd", compressed=True)
    batch = tail.read(lambda e: None, lambda: None)
    assert str(batch.error) == (
        "the log is a FIFO (named pipe), not a regular file: dshweb does not read it (at byte 0)"
    )


def _frame_of(chunks: int, piece: bytes) -> bytes:
    """One zstd frame holding ``chunks`` × ``piece``, compressed without holding it whole."""
    compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False)
    parts = compressor.compressobj()
    out = [parts.compress(piece) for _ in range(chunks)]
    out.append(parts.flush())
    return b"".join(out)


def test_a_bomb_frame_is_stopped_while_it_decompresses(tmp_path: Path) -> None:
    bomb = _frame_of(300, b"x" * (1 << 20))  # 300 MiB of one line, a few hundred KB on disk
    assert len(bomb) < 1 << 20
    path = tmp_path / "session.v4.jsonl.zstd"
    path.write_bytes(frame(header()) + frame(event(0)) + bomb)
    tail = LogTail(path, compressed=True)
    tracemalloc.start()
    batch = tail.read(lambda e: None, lambda: None)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert batch.events == 1  # the events before the bomb are kept
    assert str(batch.error).startswith("line longer than 64 MiB (the limit) (at byte ")
    assert peak < 3 * reader.MAX_LINE  # never the whole 300 MiB
    # reported once: the next read does not decompress it again
    calls: list[int] = []

    real = frames.decompressor

    def counted() -> zstandard.ZstdDecompressor:
        calls.append(1)
        return real()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(frames, "decompressor", counted)
        again = tail.read(lambda e: None, lambda: None)
    assert (again.events, calls) == (0, [])
    assert tail.error == batch.error


def test_a_frame_past_its_decoded_limit_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "MAX_FRAME", 4 << 20)
    line = b'{"type":"plugin/x","seq":0,"data":"' + b"y" * 1000 + b'"}\n'
    path = tmp_path / "session.v4.jsonl.zstd"
    path.write_bytes(frame(header()) + _frame_of(8000, line))  # 8 MB of lines
    batch = LogTail(path, compressed=True).read(lambda e: None, lambda: None)
    assert str(batch.error).startswith("frame decodes to more than 4 MiB (the limit)")


def test_a_torn_frame_past_its_size_limit_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "MAX_FRAME_BYTES", 1 << 20)
    compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False)
    big = compressor.compress(os.urandom(4 << 20))  # 4 MiB that does not compress
    head = frame(header()) + frame(event(0))
    path = tmp_path / "session.v4.jsonl.zstd"
    path.write_bytes(head + big[: 3 << 20])  # still being written, and already too large
    batch = LogTail(path, compressed=True).read(lambda e: None, lambda: None)
    assert batch.events == 1
    assert str(batch.error) == f"frame larger than 1 MiB (the limit) (at byte {len(head)})"


def test_a_plain_log_with_a_huge_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_LINE", 1 << 20)
    path = tmp_path / "session.v4.jsonl"
    path.write_bytes(
        b'{"type":"session","id":"s"}\n{"type":"turn/start","seq":0}\n' + b"z" * (3 << 20)
    )
    batch = LogTail(path, compressed=False).read(lambda e: None, lambda: None)
    assert batch.events == 1
    assert str(batch.error).startswith("line longer than 1 MiB (the limit)")


@pytest.mark.parametrize(
    ("patch", "error"),
    [
        (
            "- id: compaction-basic\n  config: {thresholdRatio: .inf}\n",
            "compaction-basic does not start with profile 'sdk': thresholdRatio must be a number",
        ),
        (
            "- id: compaction-basic\n  config: &c {headroomTokens: *c}\n",
            "circular structure (an alias inside its own anchor) at line 2, column 11",
        ),
        (
            "- id: compaction-basic\n  config:\n    a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
            + "".join(
                f"    {n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
                for p, n in zip("abcdefg", "bcdefgh", strict=True)
            ),
            "aliases expand this document past 100000 values at line 7, column 8",
        ),
    ],
    ids=["inf", "recursive-alias", "alias-bomb"],
)
def test_a_profile_dsh_cannot_use_is_named_and_the_rest_works(
    tmp_path: Path, patch: str, error: str
) -> None:
    home = _home(tmp_path)
    layer = home / "profiles" / "sdk" / "cordis.patch.yml"
    layer.parent.mkdir(parents=True)
    layer.write_text(patch)
    index = HomeIndex(home, profile="sdk")
    index.refresh()
    (shot,) = index.snapshots()
    assert shot.point is None
    assert len(shot.errors) == 1 and error in shot.errors[0], shot.errors
    assert shot.events > 0 and shot.token_usage["outputTokens"] > 0  # the session still folds
