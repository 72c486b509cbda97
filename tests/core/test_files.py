"""The one reader of a DSH home's files (dshweb/core/files.py): every hostile kind of
file at a path it reads gives a message naming the file, at once, and never its bytes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dshweb.core import files
from dshweb.core.files import FileRefused, read_file, read_text
from tests.support.unprivileged import without_reading_rights

LIMIT = 1 << 20


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "profiles" / "sdk").mkdir(parents=True)
    return home


def _within(seconds: float, call: object) -> object:
    """``call()``'s result, failing if it does not return within ``seconds``."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(call())  # type: ignore[operator]
        except BaseException as error:
            box.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"still reading after {seconds} s"
    return box[0]


def test_a_regular_file_reads_whole_and_a_missing_one_as_none(tmp_path: Path) -> None:
    home = _home(tmp_path)
    target = home / "profiles" / "sdk" / "cordis.patch.yml"
    target.write_bytes(b"[]\n\xff")
    assert read_file(target, limit=LIMIT, home=home) == b"[]\n\xff"
    assert read_text(target, limit=LIMIT, home=home) == "[]\n\ufffd"
    assert read_file(home / "profiles" / "web" / "cordis.patch.yml", limit=LIMIT, home=home) is None
    # below something that is not a folder: nothing there either
    assert read_file(target / "x", limit=LIMIT, home=home) is None


HOSTILE: dict[str, tuple[Callable[[Path], object], str]] = {
    "fifo": (lambda p: os.mkfifo(p), "is a FIFO (named pipe), not a regular file"),
    "folder": (lambda p: p.mkdir(), "is a folder, not a regular file"),
    "link to /dev/zero": (lambda p: p.symlink_to("/dev/zero"), "is a symbolic link"),
    "link to a file": (lambda p: p.symlink_to("/etc/passwd"), "is a symbolic link"),
}


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_file_in_a_home_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    home = _home(tmp_path)
    target = home / "profiles" / "sdk" / "cordis.patch.yml"
    make, words = HOSTILE[kind]
    make(target)
    refused = _within(5, lambda: read_file(target, limit=LIMIT, home=home))
    assert isinstance(refused, FileRefused)
    assert str(refused).startswith(f"{target} {words}")


def test_a_device_is_refused_without_being_opened(tmp_path: Path) -> None:
    home = _home(tmp_path)
    target = home / "cordis.patch.yml"
    try:
        os.mknod(target, 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's numbers
    except PermissionError:
        pytest.skip("making a device needs CAP_MKNOD")
    opened: list[str] = []
    real_open = os.open

    def spy(path: object, *args: object, **kwargs: object) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "open", spy)
        with pytest.raises(FileRefused, match="is a character device, not a regular file"):
            read_file(target, limit=LIMIT, home=home)
    assert "cordis.patch.yml" not in opened  # a device's open can act on the device


def test_a_link_is_followed_only_where_asked_and_never_to_a_device(tmp_path: Path) -> None:
    home = _home(tmp_path)
    package = tmp_path / "outside" / "package.json"
    package.parent.mkdir()
    package.write_text('{"version": "1.2.3"}')
    modules = home / "profiles" / "sdk" / "node_modules"
    modules.mkdir()
    (modules / "dsh-context-truth").symlink_to(package.parent)  # as pnpm links a package
    manifest = modules / "dsh-context-truth" / "package.json"
    with pytest.raises(FileRefused, match="node_modules/dsh-context-truth is a symbolic link"):
        read_file(manifest, limit=LIMIT, home=home)
    assert read_file(manifest, limit=LIMIT, follow_links=True) == b'{"version": "1.2.3"}'
    endless = tmp_path / "endless"
    endless.symlink_to("/dev/zero")
    refused = _within(5, lambda: read_file(endless, limit=LIMIT, follow_links=True))
    assert isinstance(refused, FileRefused)
    assert "is a character device, not a regular file" in str(refused)


def test_a_linked_folder_inside_the_home_is_not_followed(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "cordis.patch.yml").write_text("[]\n")
    (home / "profiles" / "linked").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileRefused) as refused:
        read_file(home / "profiles" / "linked" / "cordis.patch.yml", limit=LIMIT, home=home)
    assert str(refused.value) == (
        f"{home}/profiles/linked is a symbolic link: dshweb follows no link inside a DSH home"
    )
    for outside in (tmp_path / "elsewhere", home / "profiles" / ".." / ".." / "elsewhere"):
        with pytest.raises(FileRefused, match="is outside"):
            read_file(outside / "cordis.patch.yml", limit=LIMIT, home=home)


def test_a_huge_file_is_refused_by_its_size_without_reading_it(tmp_path: Path) -> None:
    home = _home(tmp_path)
    target = home / "cordis.patch.yml"
    with target.open("wb") as sparse:
        sparse.truncate(10 << 30)  # 10 GiB of nothing on disk
    started = time.monotonic()
    with pytest.raises(FileRefused) as refused:
        read_file(target, limit=LIMIT, home=home)
    assert time.monotonic() - started < 1
    assert str(refused.value) == (f"{target} is 10 GiB; dshweb reads at most 1 MiB of such a file")


def test_a_file_whose_size_lies_is_cut_at_the_limit(tmp_path: Path) -> None:
    # /proc files say 0 bytes and hold more: the bound is what was read, not st_size
    maps = Path("/proc/self/maps")
    size = len(maps.read_bytes())
    with pytest.raises(FileRefused, match=r"is more than 64 bytes; dshweb reads at most 64"):
        read_file(maps, limit=64)
    assert read_file(maps, limit=size + 4096)


def test_a_slow_read_gives_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "slow"
    target.write_bytes(b"x" * 100)
    monkeypatch.setattr(files, "PIECE", 1)
    real_read = os.read

    def slow(fd: int, n: int) -> bytes:
        time.sleep(0.02)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", slow)
    with pytest.raises(FileRefused, match=r"took longer than 0.1 s to read: dshweb gave up"):
        read_file(target, limit=LIMIT, seconds=0.1)


def test_an_unreadable_file_or_folder_says_permission_denied(tmp_path: Path) -> None:
    home = _home(tmp_path)
    target = home / "profiles" / "sdk" / "cordis.patch.yml"
    target.write_text("[]\n")
    target.chmod(0)
    closed = home / "profiles" / "web"
    (closed / "package.json").parent.mkdir()
    (closed / "package.json").write_text("{}")
    closed.chmod(0)
    probe = (
        "import sys; from pathlib import Path; from dshweb.core.files import read_file, "
        "FileRefused\nhome = Path(sys.argv[1])\nfor name in sys.argv[2:]:\n"
        "    try: read_file(home / name, limit=99, home=home)\n"
        "    except FileRefused as e: print(e)\n"
    )
    try:
        done = subprocess.run(
            without_reading_rights(
                [
                    sys.executable,
                    "-c",
                    probe,
                    str(home),
                    "profiles/sdk/cordis.patch.yml",
                    "profiles/web/package.json",
                ]
            ),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    finally:
        closed.chmod(0o755)
    assert done.stdout.splitlines() == [
        f"{target} cannot be read: permission denied",
        f"{closed}/package.json cannot be read: permission denied",
    ]


@pytest.mark.parametrize(
    ("size", "words"),
    [(0, "0 bytes"), (1023, "1,023 bytes"), (4 << 20, "4 MiB"), (3 << 29, "1.5 GiB")],
)
def test_sizes_read_as_words(size: int, words: str) -> None:
    assert files.size_words(size) == words
