"""Concurrent writers of one patch file, and a profile folder without write permission:
real files, real threads."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from dshweb.core.settings.patchfile import (
    PatchConflict,
    PatchError,
    read_patch,
    write_patch_atomically,
)

WRITERS = 10


def test_concurrent_writers_with_one_expected_hash_write_exactly_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cordis.patch.yml"
    path.write_text("[]\n")
    expected = read_patch(path).sha256
    real_replace = os.replace

    def slow_replace(src: str, dst: str) -> None:  # a slow disk: the swap takes a while
        threading.Event().wait(0.2)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", slow_replace)
    start = threading.Barrier(WRITERS)
    written: list[int] = []
    conflicts: list[int] = []

    def write(i: int) -> None:
        start.wait()
        try:
            write_patch_atomically(path, f"# writer {i}\n[]\n", expected_sha256=expected)
        except PatchConflict:
            conflicts.append(i)
        else:
            written.append(i)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(written) == 1 and len(conflicts) == WRITERS - 1
    assert path.read_text() == f"# writer {written[0]}\n[]\n"


def test_a_folder_without_write_permission_is_refused_with_the_reason(tmp_path: Path) -> None:
    folder = tmp_path / "profile"
    folder.mkdir()
    path = folder / "cordis.patch.yml"
    path.write_text("[]\n")
    folder.chmod(0o555)  # root could still write here: the mode bits must be read
    try:
        with pytest.raises(PatchError, match=r"profile/ has no write permission \(mode 0555\)"):
            write_patch_atomically(path, "# new\n[]\n", expected_sha256=read_patch(path).sha256)
        assert path.read_text() == "[]\n"
        assert sorted(p.name for p in folder.iterdir()) == ["cordis.patch.yml"]
    finally:
        folder.chmod(0o755)
