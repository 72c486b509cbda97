"""Home discovery, generations and passive liveness (DSH_FACTS §1)."""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

import pytest

from dshweb.core.errors import HomeError
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import (
    check_home,
    dsh_home,
    encode_segment,
    filed_as,
    is_live,
    lock_holders,
    locked_files,
    newest_log,
    project_folder,
    session_logs,
)
from tests.conftest import all_homes
from tests.support.logbuilder import event, frame, header


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"DSH_HOME": "/x/y"}, Path("/x/y")),
        ({"DSH_HOME": ""}, Path.home() / ".dsh"),
        ({}, Path.home() / ".dsh"),
    ],
)
def test_dsh_home(env: dict[str, str], expected: Path) -> None:
    assert dsh_home(env) == expected


def test_newest_generation_wins_and_tmp_is_ignored(tmp_path: Path) -> None:
    for name in [
        "session.jsonl",
        "session.v2.jsonl.zstd",
        "session.v3.jsonl",
        "session.v9.jsonl.zstd.tmp",
        "session.v4.jsonl.zstd.123.tmp",
        "session.lock",
    ]:
        (tmp_path / name).write_bytes(b"")
    log = newest_log(tmp_path)
    assert log is not None
    assert (log.path.name, log.version, log.compressed) == ("session.v3.jsonl", 3, False)
    (tmp_path / "session.v4.jsonl.zstd").write_bytes(b"")
    log = newest_log(tmp_path)
    assert log is not None and (log.version, log.compressed) == (4, True)


def test_plain_v0_is_found(tmp_path: Path) -> None:
    (tmp_path / "session.jsonl").write_bytes(b"")
    log = newest_log(tmp_path)
    assert log is not None and (log.version, log.compressed) == (0, False)


def _session(home: Path, project: str, sid: str, *events: dict[str, object]) -> Path:
    folder = home / "sessions" / project / sid
    folder.mkdir(parents=True)
    (folder / "session.v4.jsonl.zstd").write_bytes(
        frame(header(sid)) + frame(*events or (event(0),))
    )
    (folder / "session.lock").write_bytes(b"")
    return folder


def test_discovery_lists_every_session(tmp_path: Path) -> None:
    _session(tmp_path, "--a--", "s1")
    _session(tmp_path, "--a--", "s2")
    _session(tmp_path, "_no-cwd", "s3")
    (tmp_path / "sessions" / "--a--" / "empty").mkdir()
    assert sorted(p.path.parent.name for p in session_logs(tmp_path)) == ["s1", "s2", "s3"]


def test_liveness_is_read_from_the_kernel_without_locking(tmp_path: Path) -> None:
    folder = _session(tmp_path, "--a--", "s1")
    assert is_live(folder, locked_files()) is False
    with (folder / "session.lock").open("rb") as handle:  # the test plays DSH here
        fcntl.flock(handle, fcntl.LOCK_EX)
        assert is_live(folder, locked_files()) is True
        index = HomeIndex(tmp_path)
        index.refresh()
        assert [s.live for s in index.snapshots()] == [True]
    assert is_live(folder, locked_files()) is False


def test_locks_file_parsing(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    locks.write_text(
        "1: FLOCK  ADVISORY  WRITE 3052 fe:00:2220675 0 EOF\n"
        "2: POSIX  ADVISORY  READ 11 08:01:77 0 EOF\n"
        "2: -> FLOCK  ADVISORY  WRITE 99 08:01:78 0 EOF\n"
        "garbage\n"
    )
    import os

    assert locked_files(locks) == {(os.makedev(0xFE, 0), 2220675), (os.makedev(8, 1), 77)}
    locks.write_text(
        "1: FLOCK  ADVISORY  WRITE 3052 fe:00:2220675 0 EOF\n"
        "2: FLOCK  ADVISORY  READ 3060 fe:00:2220675 0 EOF\n"
        "3: OFDLCK ADVISORY  WRITE -1 08:01:77 0 EOF\n"
        "4: -> FLOCK  ADVISORY  WRITE 99 fe:00:2220675 0 EOF\n"
    )
    assert lock_holders(locks) == {
        (os.makedev(0xFE, 0), 2220675): {3052, 3060},  # a waiter (->) holds nothing
        (os.makedev(8, 1), 77): {-1},
    }
    assert lock_holders(tmp_path / "no-such-file") == {}


def test_missing_and_unreadable_homes(tmp_path: Path) -> None:
    with pytest.raises(HomeError, match="does not exist"):
        check_home(tmp_path / "nope")
    (tmp_path / "file").write_text("")
    with pytest.raises(HomeError, match="is not a folder"):
        check_home(tmp_path / "file")


def test_index_follows_new_generations_and_deletions(tmp_path: Path) -> None:
    folder = _session(tmp_path, "--a--", "s1", event(0), event(1))
    index = HomeIndex(tmp_path)
    assert index.refresh() == {folder}
    assert index.refresh() == set()
    old_version = index.trackers[folder].version
    (folder / "session.v5.jsonl.zstd").write_bytes(frame(header("s1", 5)) + frame(event(0)))
    assert index.refresh() == {folder}
    assert index.trackers[folder].version != old_version  # a publisher sees the new one
    (shot,) = index.snapshots()
    assert (shot.format_version, shot.events) == (5, 1)
    other = _session(tmp_path, "--b--", "s2")
    assert index.refresh() == {other}
    shutil.rmtree(folder)
    assert index.refresh() == {folder}
    assert [s.session_id for s in index.snapshots()] == ["s2"]


def test_one_corrupt_session_does_not_stop_the_others(tmp_path: Path) -> None:
    bad = _session(tmp_path, "--a--", "bad")
    with (bad / "session.v4.jsonl.zstd").open("ab") as handle:
        handle.write(b"nonsense")
    _session(tmp_path, "--a--", "good", event(0), event(1, "request/context", contextWindow=10))
    index = HomeIndex(tmp_path)
    index.refresh()
    shots = {s.session_id: s for s in index.snapshots()}
    assert shots["good"].errors == () and shots["good"].context_pressure == {"contextWindow": 10}
    assert shots["bad"].errors[0].startswith("not a zstd frame (bad magic)")
    assert shots["bad"].events == 1


@pytest.mark.parametrize(
    ("cwd", "folder"),
    [
        ("/home/me/a b", "--home-me-a~0020b--"),
        ("/tmp/x/报表-🎉", "--tmp-x-~62A5~8868-~D83C~DF89--"),
        ("C:\\Users\\me", "--C-Users-me--"),
        ("/a//b::c", "--a-b-c--"),
        ("/srv/-x/~y", "--srv--x-~007Ey--"),
        ("/", "--root--"),
        ("", "--root--"),
        (None, "_no-cwd"),
        ("/" + "x" * 300, "--" + "x" * 251 + "--"),
    ],
)
def test_project_folder(cwd: str | None, folder: str) -> None:
    assert project_folder(cwd) == folder


@pytest.mark.parametrize(
    ("value", "segment"),
    [("demo-live", "demo-live"), (".", "~002E"), ("..", "~002E~002E"), ("a/b c", "a~002Fb~0020c")],
)
def test_encode_segment(value: str, segment: str) -> None:
    assert encode_segment(value) == segment


def test_folders_match_what_dsh_made() -> None:
    """Every real session folder is ``project_folder(cwd)/encode_segment(id)``."""
    checked = 0
    for home in all_homes():
        for log in session_logs(home):
            tracker = SessionTracker(log)
            tracker.refresh()
            assert log.session_dir.parent.name == project_folder(tracker.header.get("cwd"))
            assert log.session_dir.name == encode_segment(tracker.header["id"])
            checked += 1
    assert checked >= 8


def test_a_changed_profile_patch_marks_every_session_changed(tmp_path: Path) -> None:
    _session(tmp_path, "--a--", "s1", event(0, "request/context", contextWindow=100_000))
    index = HomeIndex(tmp_path)
    index.refresh()
    (tracker,) = index.trackers.values()
    before = tracker.version
    (folder,) = index.trackers

    def threshold() -> int | None:
        point = index.snapshot(folder).point
        assert point is not None
        return point.threshold_tokens

    assert threshold() == 34_464  # 100000 - 65536
    patch = tmp_path / "profiles" / "sdk" / "cordis.patch.yml"
    patch.parent.mkdir(parents=True)
    patch.write_text("- id: compaction-basic\n  config: {headroomTokens: 1000}\n")
    assert index.refresh() == {folder}  # nothing folded, but every point moved
    assert tracker.version > before
    before = tracker.version
    assert threshold() == 80_000
    patch.write_text("- id: compaction-basic\n  config: [broken\n")
    index.refresh()
    assert tracker.version > before
    broken = index.snapshot(folder)
    assert broken.errors[0].startswith("DSH cannot load profile 'sdk': ")
    assert "line 3, column 1" in broken.errors[0]
    assert broken.point is None  # dsh does not start with this profile: no point to draw
    # a config the engine refuses: DSH runs without compaction, so there is no point
    patch.write_text("- id: compaction-basic\n  config: {thresholdRatio: yes}\n")
    index.refresh()
    refused = index.snapshot(folder)
    assert refused.point is None
    assert refused.errors == (
        "compaction-basic does not start with profile 'sdk': thresholdRatio must be a number",
    )
    patch.write_text("- id: compaction-basic\n  config: {headroomTokens: 1_000}\n")
    index.refresh()
    assert index.snapshot(folder).point is None  # 1_000 is a string to DSH, not 1000


def test_bands_follow_the_profiles_context_truth_edges(tmp_path: Path) -> None:
    # used 4000 of a 10,000-token compaction point: 0.4 of it
    shot = _session(
        tmp_path,
        "--a--",
        "s1",
        event(0, "request/context", contextWindow=100_000),
        event(
            1,
            "assistant/message",
            turn=1,
            step=1,
            message={"role": "assistant", "content": []},
            usage={"inputTokens": 4000, "outputTokens": 0},
        ),
    )
    patch = tmp_path / "profiles" / "sdk" / "cordis.patch.yml"
    patch.parent.mkdir(parents=True)
    patch.write_text("- id: compaction-basic\n  config: {thresholdRatio: 0.1, headroomTokens: 0}\n")
    index = HomeIndex(tmp_path)
    index.refresh()
    (snapshot,) = index.snapshots()
    assert context_gauge(snapshot).band == "ample"
    patch.write_text(
        patch.read_text()
        + "- insert:\n    - id: context-truth\n      name: dsh-context-truth\n"
        + "      config: {moderateAt: 0.3, tightAt: 0.6}\n"
    )
    index.refresh()
    (snapshot,) = index.snapshots()
    assert context_gauge(snapshot).band == "moderate"
    assert shot.name == "s1"


@pytest.mark.parametrize("home", all_homes(), ids=lambda h: h.name)
def test_every_real_session_is_filed_where_filed_as_says(home: Path) -> None:
    """The real runtime's folders: the rule that picks the shown folder of a session id
    two folders hold (a copy elsewhere in the home) names the one DSH wrote."""
    index = HomeIndex(home)
    index.refresh()
    assert index.trackers
    for folder, tracker in index.trackers.items():
        cwd = tracker.header.get("cwd")
        assert filed_as(tracker.session_id, cwd if isinstance(cwd, str) else None) == str(
            folder.relative_to(home)
        )
