"""The one way dshweb opens a file of a DSH home or of its own data folder.

Anyone who can write into a DSH home (an agent a session runs can) can put anything at a
path dshweb reads: a FIFO, a device, a link to an endless or private file, a huge file,
an unreadable one. Every such file is read through here, so none of them can block a
thread, fill the memory or show what lies outside the home.

Contract:

- Regular files only. The kind is read with ``lstat`` before the open (opening a device
  can act on it) and again with ``fstat`` on the opened descriptor (the path may have
  been swapped in between); the open never waits (``O_NONBLOCK``, ``O_NOCTTY``).
- Links: with ``home``, the path must lie inside it, and each folder from the home down
  and the file itself are opened without following a link (``openat`` with
  ``O_NOFOLLOW``): a link anywhere below the home is refused. ``follow_links=True`` is
  for the links DSH itself makes (the packages ``pnpm`` links into a profile's
  ``node_modules``) and for paths a person gave on the command line.
- Bounded: at most ``limit`` bytes are read (a larger file is refused, whatever its
  ``st_size`` claims), in pieces, for at most ``seconds`` seconds.
- A file that is not there reads as ``None``; every other failure raises
  :class:`FileRefused`, whose message names the file and says why in words a person
  reads (``… is a FIFO (named pipe), not a regular file``).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

from dshweb.core.errors import DshError
from dshweb.core.said import say

READ_SECONDS = 5.0
"""Longest one read of a regular file may take (a slow or hung file system)."""
PIECE = 1 << 18

_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = (
    (stat.S_ISDIR, say("kind-folder")),
    (stat.S_ISFIFO, say("kind-fifo")),
    (stat.S_ISCHR, say("kind-character-device")),
    (stat.S_ISBLK, say("kind-block-device")),
    (stat.S_ISSOCK, say("kind-socket")),
    (stat.S_ISLNK, say("kind-link")),
)
_MISSING = (errno.ENOENT, errno.ENOTDIR)
IN_HOME_LINK = say("file-link-in-home")
LINK = say("file-link")


class FileRefused(DshError):
    """A file dshweb will not read, or cannot: ``path`` and the ``reason`` in words."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path = Path(path)
        self.reason = reason


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words ("a FIFO (named pipe)")."""
    return next((words for test, words in _KINDS if test(mode)), say("kind-other"))


def size_words(size: int) -> str:
    """A byte count in words: ``4 MiB``, ``1.5 GiB``, ``512 bytes``."""
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{size:,} bytes" if unit == "bytes" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _refuse_kind(path: Path, mode: int) -> FileRefused:
    return FileRefused(path, say("file-kind", kind=kind_of(mode)))


def _os_problem(path: Path, error: OSError) -> FileRefused:
    if error.errno in (errno.EACCES, errno.EPERM):
        return FileRefused(path, say("file-denied"))
    if error.errno == errno.ELOOP:
        return FileRefused(path, LINK)
    return FileRefused(path, say("file-unreadable", error=error.strerror or error))


def open_file(path: Path, *, home: Path | None = None, follow_links: bool = False) -> int | None:
    """A read-only descriptor of the regular file at ``path`` (the caller closes it);
    ``None`` when there is no such file. Raises :class:`FileRefused`."""
    parts: tuple[str, ...] = ()
    if home is not None:
        parts = path.relative_to(home).parts if path.is_relative_to(home) else ("..",)
        if ".." in parts:  # pathlib keeps a "..": the walk would climb out
            raise FileRefused(path, say("file-outside-home", home=home))
    if home is not None and not parts:
        raise FileRefused(path, say("file-home-itself"))
    folder: int | None = None
    try:
        if home is not None:
            folder = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            where = home
            for part in parts[:-1]:
                where = where / part
                if not _is_folder(where, part, folder):
                    return None  # not a folder: nothing can be below it
                inner = os.open(part, _FOLDER, dir_fd=folder)
                os.close(folder)
                folder = inner
        return _open_final(path, parts[-1] if parts else path, folder, follow_links)
    except OSError as error:
        if error.errno in _MISSING:
            return None
        raise _os_problem(path, error) from error
    finally:
        if folder is not None:
            os.close(folder)


def _is_folder(where: Path, name: str, folder: int) -> bool:
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise FileRefused(where, IN_HOME_LINK)
    return stat.S_ISDIR(st.st_mode)


def _open_final(path: Path, name: Path | str, folder: int | None, follow_links: bool) -> int | None:
    st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        if not follow_links:
            raise FileRefused(path, LINK if folder is None else IN_HOME_LINK)
        st = os.stat(name, dir_fd=folder)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse_kind(path, st.st_mode)
    flags = _OPEN if follow_links else _OPEN | os.O_NOFOLLOW
    fd = os.open(name, flags, dir_fd=folder)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise _refuse_kind(path, opened.st_mode)  # swapped since the lstat
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(
    path: Path,
    *,
    limit: int,
    home: Path | None = None,
    follow_links: bool = False,
    seconds: float = READ_SECONDS,
) -> bytes | None:
    """The bytes of the regular file at ``path`` (at most ``limit``), ``None`` when there
    is none. Raises :class:`FileRefused` (a link, a FIFO, a device, a folder, too big,
    too slow, unreadable)."""
    fd = open_file(path, home=home, follow_links=follow_links)
    if fd is None:
        return None
    try:
        return _read_bounded(path, fd, limit, seconds)
    except OSError as error:
        raise _os_problem(path, error) from error
    finally:
        os.close(fd)


def _read_bounded(path: Path, fd: int, limit: int, seconds: float) -> bytes:
    size = os.fstat(fd).st_size
    if size > limit:
        raise _too_big(path, size, limit)
    deadline = time.monotonic() + seconds
    pieces: list[bytes] = []
    held = 0
    while True:
        piece = os.read(fd, min(PIECE, limit + 1 - held))
        if not piece:
            return b"".join(pieces)
        pieces.append(piece)
        held += len(piece)
        if held > limit:  # it grew, or its size lies (a file of /proc or /sys)
            raise _too_big(path, held, limit, at_least=True)
        if time.monotonic() > deadline:
            raise FileRefused(path, say("file-slow", seconds=f"{seconds:g}"))


def _too_big(path: Path, size: int, limit: int, *, at_least: bool = False) -> FileRefused:
    held = f"more than {size_words(limit)}" if at_least else size_words(size)
    return FileRefused(path, say("file-too-big", size=held, limit=size_words(limit)))


def read_text(
    path: Path,
    *,
    limit: int,
    home: Path | None = None,
    follow_links: bool = False,
    seconds: float = READ_SECONDS,
) -> str | None:
    """:func:`read_file` decoded as UTF-8 (a bad byte reads as U+FFFD)."""
    data = read_file(path, limit=limit, home=home, follow_links=follow_links, seconds=seconds)
    return None if data is None else data.decode("utf-8", "replace")
