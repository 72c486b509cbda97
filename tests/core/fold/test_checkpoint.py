"""Checkpoints: a tracker dumped at any point of a real log, loaded after the log grew,
folds to the same snapshot as a cold fold; a checkpoint that cannot be trusted is refused."""

from __future__ import annotations

import dataclasses
import os
import pickle
import random
import zlib
from pathlib import Path

import pytest
import zstandard

from dshweb.core.fold import checkpoint
from dshweb.core.fold.checkpoint import (
    CHECKPOINT_VERSION,
    Refusal,
    checkpoint_tag,
    dump_checkpoint,
    load_checkpoint,
    restore_checkpoint,
    seal,
    unseal,
)
from dshweb.core.fold.session import SessionSnapshot, SessionTracker, take_snapshot
from dshweb.core.log.frames import frame_spans, split_frames
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import LogTail
from dshweb.core.profile.effective import EngineConfig
from tests.conftest import all_homes, run_python, session_log_paths
from tests.support.differences import Difference, differences, fail_on
from tests.support.logbuilder import event, frame, header
from tests.support.pickles import ForgedGetattr, asks_getattr, enums_pickled_by_name

LOGS = [path for home in all_homes() for path in session_log_paths(home)]
KEY = b"test-key-" * 4
POINTS = 3
"""Random cuts per log at a frame or line boundary (plus one torn cut)."""


def _id(path: Path) -> str:
    return f"{path.parents[2].name}/{path.parent.name}"


def _plain(data: bytes) -> bytes:
    """A compressed log's lines as a plain ``.jsonl`` log."""
    chunks, error = split_frames(data, 0)
    assert error is None
    return b"".join(chunk.text for chunk in chunks)


def _boundaries(data: bytes, compressed: bool) -> list[tuple[int, int]]:
    """(start, end) of every frame, or of every line."""
    if compressed:
        spans, error = frame_spans(data, 0)
        assert error is None and spans[-1][1] == len(data)
        return [(start, end) for start, end, _blocks in spans]
    found, start = [], 0
    while (end := data.find(b"\n", start) + 1) > 0:
        found.append((start, end))
        start = end
    return found


def _log(folder: Path, compressed: bool) -> LogFile:
    name = "session.v4.jsonl.zstd" if compressed else "session.v4.jsonl"
    return LogFile(folder / name, 4, compressed)


def _tracker(log: LogFile, stop_after_seq: int | None = None) -> SessionTracker:
    tracker = SessionTracker(log, stop_after_seq=stop_after_seq)
    tracker.refresh()
    return tracker


def _snapshot(tracker: SessionTracker, home: Path) -> SessionSnapshot:
    return take_snapshot(tracker, home=home, live=False, engine=EngineConfig(), largest=1 << 30)


def _parts(tracker: SessionTracker, home: Path) -> dict[str, object]:
    """What a restored tracker must share with a cold fold: its snapshot, its collectors,
    its header and error, and where its tail stands."""
    tail = tracker.tail
    return {
        "snapshot": _snapshot(tracker, home),
        "meter": tracker.meter,
        "activity": tracker.activity,
        "pace": tracker.pace,
        "ledger": tracker.ledger,
        "told": tracker.told,
        "cost": tracker.cost,
        "requests": tracker.requests,
        "header": tracker.header,
        "error": tracker.error,
        "stop_after_seq": tracker.stop_after_seq,
        "tail": {"offset": tail.offset, "identity": tail.identity, "next_seq": tail.next_seq},
    }


def _unlike_cold(found: SessionTracker, cold: SessionTracker, home: Path) -> list[Difference]:
    return differences(_parts(found, home), _parts(cold, home))


def _assert_same(found: SessionTracker, cold: SessionTracker, home: Path) -> None:
    lines = [d.line("found", "cold") for d in _unlike_cold(found, cold, home)]
    fail_on(lines, "unlike a cold fold")


def _restart_at(data: bytes, cut: int, log: LogFile, cold: SessionTracker, home: Path) -> list[str]:
    """What goes wrong when the tracker of the log cut at ``cut`` is dumped, loaded before
    the log grows and restored after, and both fold on (nothing: both equal ``cold``)."""
    log.path.write_bytes(data[:cut])
    before = _tracker(log)
    blob = dump_checkpoint(before, key=KEY)

    early = load_checkpoint(log, blob, key=KEY)  # loaded before the log grows
    if early is None:
        return ["loaded before the log grew: refused"]
    found: list[str] = []
    if early.version <= before.version:
        found.append(f"loaded: version {early.version}, not past {before.version}")
    if early.refresh():
        found.append("loaded: folded again before the log grew")
    with log.path.open("ab") as handle:  # the same inode, grown
        handle.write(data[cut:])

    restored = restore_checkpoint(log, blob, key=KEY)
    if not isinstance(restored, SessionTracker):
        return [*found, f"restored: refused ({restored})"]
    found += [
        f"restored: {d.line('restored', 'dumped')}"
        for d in differences(
            {"offset": restored.tail.offset, "meter": restored.meter},
            {"offset": before.tail.offset, "meter": before.meter},
        )
    ]
    restored.refresh()
    early.refresh()
    for name, tracker in (("restored", restored), ("loaded early", early)):
        found += [
            f"{name}, folded on: {d.line(name, 'cold')}" for d in _unlike_cold(tracker, cold, home)
        ]
    return found


@pytest.mark.parametrize("source", LOGS, ids=[_id(p) for p in LOGS])
def test_restart_anywhere_folds_like_a_cold_fold(source: Path, tmp_path: Path) -> None:
    """In each form of the log (its zstd frames, and its lines as plain ``.jsonl``), a
    tracker dumped at :data:`POINTS` random frame or line boundaries and at one torn cut
    folds on like a cold fold, loaded before the log grew or restored after."""
    found: list[str] = []
    for compressed, form in ((True, "zstd"), (False, "jsonl")):
        data = source.read_bytes() if compressed else _plain(source.read_bytes())
        folder = tmp_path / form
        folder.mkdir()
        log = _log(folder, compressed)
        log.path.write_bytes(data)
        cold = _tracker(log)
        assert cold.error is None and cold.meter.events > 0, (form, cold.error)

        rng = random.Random(zlib.crc32(f"{_id(source)} {compressed}".encode()))
        spans = _boundaries(data, compressed)
        cuts = [0, *(end for _start, end in spans)]
        torn = [(start, end) for start, end in spans if end - start > 1]
        start, end = rng.choice(torn)
        for cut in [*rng.sample(cuts, min(POINTS, len(cuts))), rng.randrange(start + 1, end)]:
            where = f"{form}, cut at byte {cut:,} of {len(data):,}"
            found += [f"{where}: {line}" for line in _restart_at(data, cut, log, cold, folder)]
    fail_on(found, f"{_id(source)}: a restart unlike a cold fold")


def test_restart_inside_a_session_stopped_at_a_seq(tmp_path: Path) -> None:
    source = max(LOGS, key=lambda p: p.stat().st_size)
    data = source.read_bytes()
    log = _log(tmp_path, True)
    cut = _boundaries(data, True)[5][1]
    log.path.write_bytes(data[:cut])
    before = _tracker(log, stop_after_seq=40)
    blob = dump_checkpoint(before, key=KEY)
    with log.path.open("ab") as handle:
        handle.write(data[cut:])
    restored = load_checkpoint(log, blob, key=KEY)
    assert restored is not None and restored.stop_after_seq == 40
    restored.refresh()
    _assert_same(restored, _tracker(log, stop_after_seq=40), tmp_path)


def test_a_sticky_read_error_survives_a_restart(tmp_path: Path) -> None:
    log = _log(tmp_path, True)
    log.path.write_bytes(frame(header(), event(1), event(2)) + b"garbage!")
    before = _tracker(log)
    assert before.tail.error is not None and before.error is not None
    restored = load_checkpoint(log, dump_checkpoint(before, key=KEY), key=KEY)
    assert restored is not None and restored.tail.error is not None
    error, want = restored.tail.error, before.tail.error
    assert (str(error), error.offset, error.seq) == (str(want), want.offset, want.seq)
    assert restored.refresh() is False
    _assert_same(restored, before, tmp_path)


def test_the_checkpoint_keeps_every_field_of_the_tracker() -> None:
    """A new field in the tracker or its tail must be taught to checkpoint.py."""
    assert {f.name for f in dataclasses.fields(SessionTracker)} == {
        "log",
        "stop_after_seq",
        "tail",
        "meter",
        "activity",
        "pace",
        "ledger",
        "told",
        "cost",
        "requests",
        "step_band",
        "header",
        "error",
        "version",  # fresh after a load, never restored
        "unfinished",  # fresh after a load: the next refresh folds on either way
        "settings_of",  # the index's, given again when it adopts the tracker
        "before_event",  # its caller's, never saved (the backfill folds from byte 0)
    }
    assert {f.name for f in dataclasses.fields(LogTail)} == {
        "path",
        "compressed",
        "offset",
        "identity",
        "next_seq",
        "error",
        "_held",  # never saved: a tail in the middle of a frame is refused
        "_spent",  # one read's count
        "_on_header",  # the current read's, given by the tracker at each read
        "pending",  # from the log's size at the dump: the bytes past the offset
    }


# -- refusals ------------------------------------------------------------------------------


@pytest.fixture
def dumped(tmp_path: Path) -> tuple[LogFile, bytes, bytes]:
    """A log cut in the middle, its checkpoint, and the rest of its bytes (not yet
    appended)."""
    data = max(LOGS, key=lambda p: p.stat().st_size).read_bytes()
    spans = _boundaries(data, True)
    cut = spans[len(spans) // 2][1]
    log = _log(tmp_path, True)
    log.path.write_bytes(data[:cut])
    return log, dump_checkpoint(_tracker(log), key=KEY), data[cut:]


def _refused(log: LogFile, blob: bytes, key: bytes = KEY) -> Refusal | SessionTracker:
    found = restore_checkpoint(log, blob, key=key)
    assert (load_checkpoint(log, blob, key=key) is None) == isinstance(found, Refusal)
    return found


def test_the_same_log_grown_is_accepted(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, blob, rest = dumped
    with log.path.open("ab") as handle:
        handle.write(rest)
    assert isinstance(_refused(log, blob), SessionTracker)


def test_a_replaced_log_is_refused(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, blob, _rest = dumped
    copy = log.path.with_name("copy")
    copy.write_bytes(log.path.read_bytes())
    os.replace(copy, log.path)  # same bytes, another inode
    assert _refused(log, blob) is Refusal.REPLACED


@pytest.mark.parametrize("keep", [0, 1, -1])
def test_a_truncated_log_is_refused(dumped: tuple[LogFile, bytes, bytes], keep: int) -> None:
    log, blob, _rest = dumped
    size = log.path.stat().st_size
    os.truncate(log.path, keep % size)  # empty, one byte, one byte short
    assert _refused(log, blob) is Refusal.TRUNCATED


@pytest.mark.parametrize("back", [1, 100, 4_000])
def test_a_log_rewritten_in_place_is_refused(
    dumped: tuple[LogFile, bytes, bytes], back: int
) -> None:
    log, blob, rest = dumped
    inode = log.path.stat().st_ino
    with log.path.open("r+b") as handle:  # same size, same inode, one byte changed
        handle.seek(-back, os.SEEK_END)
        old = handle.read(1)
        handle.seek(-back, os.SEEK_END)
        handle.write(bytes([old[0] ^ 0x01]))
        handle.seek(0, os.SEEK_END)
        handle.write(rest)
    assert log.path.stat().st_ino == inode
    assert _refused(log, blob) is Refusal.REWRITTEN


def test_another_log_is_refused(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, blob, _rest = dumped
    other = log.path.with_name("session.v5.jsonl.zstd")
    other.write_bytes(log.path.read_bytes())
    assert _refused(LogFile(other, 5, True), blob) is Refusal.OTHER_LOG
    assert _refused(LogFile(log.path, 5, True), blob) is Refusal.OTHER_LOG


def test_a_missing_log_is_refused(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, blob, _rest = dumped
    log.path.unlink()
    assert _refused(log, blob) is Refusal.UNREADABLE


def test_another_format_version_is_refused(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, blob, _rest = dumped
    tag = checkpoint_tag()
    body = blob[len(tag) + 32 :]
    assert isinstance(_refused(log, seal(body, key=KEY)), SessionTracker)
    other = seal(body, key=KEY, tag=checkpoint_tag(CHECKPOINT_VERSION + 1))
    assert _refused(log, other) is Refusal.FORMAT


def test_another_dshweb_version_is_refused(
    dumped: tuple[LogFile, bytes, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    log, blob, _rest = dumped
    monkeypatch.setattr(checkpoint, "_package_version", lambda: "99.0")
    assert _refused(log, blob) is Refusal.FORMAT
    monkeypatch.undo()
    monkeypatch.setattr(checkpoint, "_CORE_DIGEST", "0" * 16)
    assert _refused(log, blob) is Refusal.FORMAT


def test_a_wrong_key_is_refused(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, blob, _rest = dumped
    assert _refused(log, blob, key=b"another key") is Refusal.SIGNATURE
    with pytest.raises(ValueError, match="key"):
        restore_checkpoint(log, blob, key=b"")
    with pytest.raises(ValueError, match="key"):
        dump_checkpoint(_tracker(log), key=b"")


def test_every_flipped_byte_is_refused(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, blob, _rest = dumped
    tag = len(checkpoint_tag())
    for at in [0, tag - 1, tag, tag + 31, tag + 32, len(blob) // 2, len(blob) - 1]:
        flipped = bytearray(blob)
        flipped[at] ^= 0x40
        want = Refusal.FORMAT if at < tag else Refusal.SIGNATURE
        assert _refused(log, bytes(flipped)) is want, at
    for cut in (b"", blob[:tag], blob[: tag + 32], blob[:-1], blob + b"\0"):
        assert isinstance(_refused(log, cut), Refusal)


detonated: list[str] = []


def _detonate() -> None:
    detonated.append("ran")
    raise AssertionError("a checkpoint ran code")


class _Bomb:
    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (_detonate, ())


def test_a_forged_pickle_never_runs(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, _blob, _rest = dumped
    payload = pickle.dumps(_Bomb(), protocol=5)
    with pytest.raises(AssertionError, match="ran code"):
        pickle.loads(payload)  # the payload is live
    detonated.clear()
    body = zstandard.ZstdCompressor().compress(payload)
    # signed with another key: refused before anything is unpickled
    assert _refused(log, seal(body, key=b"the attacker's key")) is Refusal.SIGNATURE
    # signed with the right key (a leaked key): the unpickler builds only state classes
    assert _refused(log, seal(body, key=KEY)) is Refusal.CORRUPT
    assert detonated == []


def test_signed_garbage_is_corrupt(dumped: tuple[LogFile, bytes, bytes]) -> None:
    log, _blob, _rest = dumped
    compress = zstandard.ZstdCompressor().compress
    assert _refused(log, seal(b"not zstd", key=KEY)) is Refusal.CORRUPT
    assert _refused(log, seal(compress(b"not a pickle"), key=KEY)) is Refusal.CORRUPT
    assert _refused(log, seal(compress(pickle.dumps(42)), key=KEY)) is Refusal.CORRUPT


# -- without msgspec -----------------------------------------------------------------------

_LOAD_WITHOUT_MSGSPEC = """
import pickle, sys
sys.modules["msgspec"] = None  # as on a machine where it is not installed
from pathlib import Path
from dshweb.core.log import structs
from dshweb.core.fold.checkpoint import restore_checkpoint
from dshweb.core.profile.effective import EngineConfig
from dshweb.core.log.home import LogFile
from dshweb.core.fold.session import SessionTracker, take_snapshot
assert not structs.HAVE_MSGSPEC
key, *folders = sys.argv[1:]
for folder in map(Path, folders):
    log = LogFile(folder / "session.v4.jsonl.zstd", 4, True)
    tracker = restore_checkpoint(log, (folder / "blob").read_bytes(), key=key.encode())
    assert isinstance(tracker, SessionTracker), tracker
    tracker.refresh()
    snapshot = take_snapshot(
        tracker, home=folder, live=False, engine=EngineConfig(), largest=1 << 30
    )
    (folder / "snapshot").write_bytes(pickle.dumps(snapshot))
"""


def test_a_checkpoint_loads_without_msgspec(tmp_path: Path) -> None:
    """Dumped with msgspec's records, loaded and refreshed on the stdlib path."""
    folders = []
    for number, source in enumerate(LOGS):
        folder = tmp_path / str(number)
        folder.mkdir()
        data = source.read_bytes()
        spans = _boundaries(data, True)
        cut = spans[len(spans) // 2][0] + 1  # inside a frame
        log = _log(folder, True)
        log.path.write_bytes(data[:cut])
        (folder / "blob").write_bytes(dump_checkpoint(_tracker(log), key=KEY))
        with log.path.open("ab") as handle:
            handle.write(data[cut:])
        folders.append(folder)
    run_python("-c", _LOAD_WITHOUT_MSGSPEC, KEY.decode(), *map(str, folders), check=True)
    for folder in folders:
        found = pickle.loads((folder / "snapshot").read_bytes())  # written by this test
        assert found == _snapshot(_tracker(_log(folder, True)), folder), folder


# -- enum members pickled by name ------------------------------------------------------------


def test_a_checkpoint_whose_enums_were_pickled_by_name_loads(
    dumped: tuple[LogFile, bytes, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some Python 3.11 releases pickle an enum member as ``getattr(cls, name)``: their
    checkpoints load (each member looked up in its enum), equal to the same fold."""
    log, _blob, _rest = dumped
    cold = _tracker(log)
    with enums_pickled_by_name(monkeypatch):
        blob = dump_checkpoint(cold, key=KEY)
    body = unseal(blob, key=KEY)
    assert isinstance(body, bytes) and asks_getattr(body)
    loaded = load_checkpoint(log, blob, key=KEY)
    assert loaded is not None
    _assert_same(loaded, cold, log.path.parent)


def test_a_forged_getattr_of_anything_but_an_enum_member_is_corrupt(
    dumped: tuple[LogFile, bytes, bytes],
) -> None:
    log, _blob, _rest = dumped
    forged = pickle.dumps(ForgedGetattr(SessionTracker, "refresh"), protocol=5)
    body = zstandard.ZstdCompressor().compress(forged)
    assert _refused(log, seal(body, key=KEY)) is Refusal.CORRUPT
