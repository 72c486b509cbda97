"""Writing a patch file safely, and showing what a write changes.

Contract: :func:`write_patch_atomically` is a compare-and-swap on the sha256 that
:func:`~dshweb.core.profile.patch.read_patch` reported: a file that changed since it
was read is left alone and reported as :class:`PatchConflict` with its current text;
otherwise the new text replaces it whole or not at all. A file that is a symbolic link
(dangling or not) or that has no write bit is never written: :func:`write_refusal`
says why, and the write raises :class:`PatchNotWritable` with that reason before
anything is created. :func:`unified_diff` renders the change as ``diff -u`` does.
"""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path

from dshweb.core.files import FileRefused, read_file
from dshweb.core.profile.patch import PATCH_LIMIT, PatchError, sha256_hex, utf8_problem
from dshweb.core.settings.patchfile.lock import patch_file_lock

NEW_FILE_MODE = 0o644


class PatchConflict(PatchError):
    """The file changed since it was read; nothing was written."""

    def __init__(self, path: Path, *, current_text: str, current_sha256: str) -> None:
        super().__init__(f"{path} changed since it was read; nothing was written")
        self.path = path
        self.current_text = current_text
        self.current_sha256 = current_sha256


class PatchNotWritable(PatchError):
    """The file must not be replaced from here; the message says why. Nothing was written."""


def write_refusal(path: Path) -> str | None:
    """Why ``path`` must not be written from here, or None when it may be.

    A symbolic link is refused whatever it points to: writing through it would change
    (or, dangling, create) a file elsewhere, possibly outside the DSH home. A file
    without any write bit is refused: its owner marked it read-only, and a replace
    would override that (the folder's permission allows a rename, and root ignores
    the file's own mode). The mode bits are read, not the effective access.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return (
            f"{path.name} is a symbolic link (to {os.readlink(path)}); dshweb does not write "
            "through links, as that would change a file elsewhere. Replace the link with the "
            "file itself to save from here."
        )
    if not stat.S_ISREG(info.st_mode):
        return f"{path.name} is not a regular file; nothing was written."
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o222:
        return (
            f"{path.name} is read-only (mode {mode:04o}); nothing was written. Make it "
            "writable (chmod u+w) to save from here."
        )
    return None


def folder_refusal(path: Path) -> str | None:
    """Why a file cannot be created in ``path``'s folder, or None: the folder has no write
    bit (root ignores it, so the bits are read, not only the effective access)."""
    folder = path.parent
    try:
        mode = folder.stat().st_mode
    except OSError as error:
        return f"{folder} cannot be read ({error.strerror}); nothing was written."
    if not mode & 0o222 or not os.access(folder, os.W_OK):
        return (
            f"{folder.name}/ has no write permission (mode {mode & 0o777:04o}); nothing was "
            "written. Make the folder writable (chmod u+w) to save from here."
        )
    return None


def _current(path: Path) -> tuple[bytes, bool]:
    try:
        data = read_file(path, limit=PATCH_LIMIT)  # a link or a FIFO swapped in is refused
    except FileRefused as refused:
        raise PatchNotWritable(f"{refused}; nothing was written.") from refused
    return (b"", False) if data is None else (data, True)


def write_patch_atomically(path: Path, new_text: str, *, expected_sha256: str) -> None:
    """Replace ``path`` with ``new_text`` unless it changed since it was read.

    Raises :class:`PatchNotWritable` for a symbolic link or a read-only file
    (:func:`write_refusal`). The new file keeps the old one's mode (0644 when created);
    it appears whole or not at all (temp file in the same folder, fsync, ``os.replace``,
    fsync of the folder); a failed write leaves no temp file. The sha256 is checked
    again just before the swap, so only a writer racing inside that last instant can be
    missed; the swap replaces the folder entry itself, never a link's target.
    """
    if (reason := write_refusal(path)) is not None:
        raise PatchNotWritable(reason)
    if (reason := folder_refusal(path)) is not None:
        raise PatchError(reason)
    try:
        with patch_file_lock(path):  # one writer at a time: the compare-and-swap holds
            _swap(path, new_text, expected_sha256)
    except OSError as error:
        raise PatchError(f"{path.name} was not written: {error.strerror or error}") from error


def _swap(path: Path, new_text: str, expected_sha256: str) -> None:
    target = path
    current, exists = _current(target)
    _check_unchanged(path, current, expected_sha256)
    if (problem := utf8_problem(current, path.name)) is not None:
        raise PatchNotWritable(problem)  # the bytes a save would lose
    mode = stat.S_IMODE(target.stat().st_mode) if exists else NEW_FILE_MODE
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(new_text.encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp_name, mode)
        _check_unchanged(path, _current(target)[0], expected_sha256)
        os.replace(temp_name, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    with suppress(OSError):  # the file is in place; this only hastens the rename to disk
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _check_unchanged(path: Path, current: bytes, expected_sha256: str) -> None:
    sha = sha256_hex(current)
    if sha != expected_sha256:
        text = current.decode("utf-8", errors="replace")
        raise PatchConflict(path, current_text=text, current_sha256=sha)


def unified_diff(before: str, after: str, name: str) -> str:
    """A ``diff -u`` of two texts of the file ``name`` ("" when they are equal)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
