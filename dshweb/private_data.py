"""dshweb's data folder is private to the user who runs it.

``DSHWEB_DATA_DIR`` holds the secret key (it signs the login sessions), the database
(login sessions, the launch URL and token of the DSH engine) and the demo home: on a
shared host no other local user may read any of it. So the folder is 0700 and the
secret files in it 0600, whatever the umask (read without Django, like
:mod:`dshweb.environment`):

- :func:`make_private` creates the folder 0700, or tightens an existing one and the
  secret files in it (an install made before this rule, or by hand), and returns one
  line per change for the log. It never follows a symbolic link, and leaves alone a
  folder it does not own or a shared sticky one such as ``/tmp``, saying so.
- :func:`write_secret` creates a file 0600 from the start: it is never readable by
  others, not even for an instant.
- :func:`make_file_private` tightens one file; the app calls it for the SQLite
  database as soon as a connection opens it (SQLite gives its journal and WAL files the
  database's own mode).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600
SECRET_FILES = (
    "secret_key",
    "db.sqlite3",
    "db.sqlite3-journal",
    "db.sqlite3-wal",
    "db.sqlite3-shm",
)
"""The files of the data folder that hold secrets."""


def make_private(folder: Path) -> list[str]:
    """Make ``folder`` (created when missing) 0700 and its secret files 0600.

    Returns what it changed or refused to change, one line each, for the log.
    """
    try:
        folder.mkdir(mode=FOLDER_MODE, parents=True)
    except FileExistsError:
        pass
    else:
        os.chmod(folder, FOLDER_MODE)  # mkdir's mode is masked by the umask
        return []
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        info = os.stat(folder)  # a linked data folder is the user's choice: tighten the target
    changes: list[str] = []
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        if info.st_uid != os.getuid() or mode & stat.S_ISVTX:
            changes.append(
                f"{folder} is shared (mode {mode:04o}, owner uid {info.st_uid}); left as it is: "
                "point DSHWEB_DATA_DIR at a folder of your own"
            )
        else:
            os.chmod(folder, FOLDER_MODE)
            changes.append(f"{folder}: mode {mode:04o} -> {FOLDER_MODE:04o}")
    for name in SECRET_FILES:
        if change := make_file_private(folder / name):
            changes.append(change)
    return changes


def make_file_private(path: Path) -> str | None:
    """Make the regular file ``path`` 0600 (group and others lose every bit).

    Returns the change made, or None when there was nothing to do (already private,
    missing, or not a regular file: a symbolic link is never followed).
    """
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISREG(info.st_mode) or not mode & 0o077:
        return None
    new = mode & ~0o077 & 0o7777
    os.chmod(path, new)
    return f"{path}: mode {mode:04o} -> {new:04o}"


def write_secret(path: Path, text: str) -> None:
    """Create ``path`` holding ``text``, 0600 from the start; fails if it exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        stream.write(text)
