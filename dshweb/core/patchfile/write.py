"""Writing a patch file safely, and showing what a write changes.

Contract: :func:`write_patch_atomically` is a compare-and-swap on the sha256 that
:func:`~dshweb.core.patchfile.parse.read_patch` reported: a file that changed since it
was read is left alone and reported as :class:`PatchConflict` with its current text;
otherwise the new text replaces it whole or not at all. :func:`unified_diff` renders
the change as ``diff -u`` does.
"""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path

from dshweb.core.patchfile.lock import folder_refusal, patch_file_lock
from dshweb.core.patchfile.parse import PatchError, sha256_hex

NEW_FILE_MODE = 0o644


class PatchConflict(PatchError):
    """The file changed since it was read; nothing was written."""

    def __init__(self, path: Path, *, current_text: str, current_sha256: str) -> None:
        super().__init__(f"{path} changed since it was read; nothing was written")
        self.path = path
        self.current_text = current_text
        self.current_sha256 = current_sha256


def _current(path: Path) -> tuple[bytes, bool]:
    try:
        return path.read_bytes(), True
    except FileNotFoundError:
        return b"", False


def write_patch_atomically(path: Path, new_text: str, *, expected_sha256: str) -> None:
    """Replace ``path`` with ``new_text`` unless it changed since it was read.

    A symlinked file is written through to its target. The new file keeps the old
    one's mode (0644 when created); it appears whole or not at all (temp file in the
    same folder, fsync, ``os.replace``, fsync of the folder); a failed write leaves no
    temp file. The sha256 is checked again just before the swap, so only a writer
    racing inside that last instant can be missed.
    """
    if (reason := folder_refusal(path)) is not None:
        raise PatchError(reason)
    try:
        with patch_file_lock(path):  # one writer at a time: the compare-and-swap holds
            _swap(path, new_text, expected_sha256)
    except OSError as error:
        raise PatchError(f"{path.name} was not written: {error.strerror or error}") from error


def _swap(path: Path, new_text: str, expected_sha256: str) -> None:
    target = Path(os.path.realpath(path))
    current, exists = _current(target)
    _check_unchanged(path, current, expected_sha256)
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
