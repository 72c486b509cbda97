"""dshweb's data folder is private to the user who runs it.

``DSHWEB_DATA_DIR`` holds the secret key (it signs the login sessions), the database
(the users and their password hashes, login sessions, the launch URL and token of the
``dsh web`` the Compact button asks), the static files the pages load and the demo home:
on a shared host no other local user may read any of it, and none may write it (whoever
replaces the database signs in as anyone). So the folder is 0700 and the secret files in it 0600,
whatever the umask (read without Django, like :mod:`dshweb.environment`):

- :func:`data_problems` says what dshweb refuses to use, each a
  :class:`~dshweb.setting_errors.ConfigurationError` of ``DSHWEB_DATA_DIR`` with the
  command that fixes it: a folder (or, in it, the key, the database and its journals,
  ``staticfiles`` and ``demo-home``) that another user owns or that others can write
  (group or world write, a shared sticky folder such as ``/tmp``), a folder its owner
  cannot use, a file that is not a regular file (a FIFO, a device, a folder) or is a
  symbolic link. A linked data folder is the user's choice and is followed; no link in
  it is. ``settings.py`` runs it when imported, so every command refuses such a folder.
- :func:`make_private` creates the folder 0700, or tightens an existing one and the
  secret files in it that are merely readable by others (an install made before this
  rule, or by hand), and returns one line per change for the log; it refuses what
  :func:`data_problems` refuses. It never follows a symbolic link in the folder.
- :func:`write_secret` creates a file 0600 from the start: it is never readable by
  others, not even for an instant.
- :func:`make_file_private` tightens one file; the app calls it for the SQLite
  database as soon as a connection opens it (SQLite gives its journal and WAL files the
  database's own mode).
"""

from __future__ import annotations

import os
import pwd
import shlex
import stat
from pathlib import Path

from dshweb.core.files import kind_of
from dshweb.setting_errors import ConfigurationError

SETTING = "DSHWEB_DATA_DIR"
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
KEY_FILES = SECRET_FILES[:1]
DATABASE_FILES = SECRET_FILES[1:]
FOLDERS = ("staticfiles", "demo-home")
"""The folders in it: the files the pages load (``collectstatic``) and the demo home."""
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def make_private(folder: Path) -> list[str]:
    """Make ``folder`` (created when missing) 0700 and its secret files 0600.

    Returns what it changed, one line each, for the log. Raises
    :class:`~dshweb.setting_errors.ConfigurationError` for what :func:`data_problems`
    refuses (nothing is changed then).
    """
    try:
        folder.mkdir(mode=FOLDER_MODE, parents=True)
    except FileExistsError:
        pass
    except OSError as error:
        raise _problem(folder, f"cannot be made: {error.strerror or error}", _ELSEWHERE) from None
    else:
        os.chmod(folder, FOLDER_MODE)  # mkdir's mode is masked by the umask
        return []
    if problems := data_problems(folder, names=(*SECRET_FILES, *FOLDERS)):
        raise problems[0]
    changes: list[str] = []
    mode = stat.S_IMODE(os.stat(folder).st_mode)  # a linked data folder: its target
    if mode & 0o077:
        os.chmod(folder, FOLDER_MODE)
        changes.append(f"{folder}: mode {mode:04o} -> {FOLDER_MODE:04o}")
    for name in SECRET_FILES:
        if change := make_file_private(folder / name):
            changes.append(change)
    return changes


def data_problems(folder: Path, *, names: tuple[str, ...]) -> list[ConfigurationError]:
    """What dshweb refuses to use in the data folder ``folder``: the folder itself, then
    each of ``names`` in it that is there (a missing one is made when needed). Looks at
    the kind, the owner and the mode only: opens and reads nothing."""
    if (problem := _folder_problem(folder)) is not None:
        return [problem]
    if not folder.exists():
        return []
    return [p for name in names if (p := _entry_problem(folder / name)) is not None]


_ELSEWHERE = f"point {SETTING} at a folder of your own"


def _problem(path: Path, problem: str, fix: str) -> ConfigurationError:
    return ConfigurationError(SETTING, f"{path} {problem}", fix)


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _kind(mode: int) -> str:
    return "a regular file" if stat.S_ISREG(mode) else kind_of(mode)


def _sudo() -> str:
    return "" if os.geteuid() == 0 else "sudo "


def _not_yours(path: Path, uid: int, what: str, chown: str) -> ConfigurationError:
    me = os.geteuid()
    return _problem(
        path,
        f"is owned by {_user(uid)} (uid {uid}), not by you ({_user(me)}, uid {me}): "
        f"its owner could replace {what}, dshweb does not use it",
        f"{_ELSEWHERE}; or if what it holds is yours: {_sudo()}{chown} {_user(me)} "
        f"{shlex.quote(str(path))}",
    )


def _folder_problem(folder: Path) -> ConfigurationError | None:
    try:
        info = os.stat(folder)  # a linked data folder is the user's choice: its target
    except (FileNotFoundError, NotADirectoryError):
        return None  # made by dshweb serve (a file on the way: it says so then)
    except OSError as error:
        return _problem(folder, f"cannot be reached: {error.strerror or error}", _ELSEWHERE)
    mode = stat.S_IMODE(info.st_mode)
    quoted = shlex.quote(str(folder))
    if not stat.S_ISDIR(info.st_mode):
        return _problem(folder, f"is {_kind(info.st_mode)}, not a folder", _ELSEWHERE)
    if info.st_uid != os.geteuid():
        return _not_yours(folder, info.st_uid, "the database and sign in as anyone", "chown -R")
    if mode & _OTHERS_WRITE:
        return _problem(
            folder,
            f"is writable by others (mode {mode:04o}): they could replace the database and "
            "sign in as anyone",
            f"{_ELSEWHERE}; or check that no one else put a file in it, then: "
            f"chmod {FOLDER_MODE:o} {quoted}",
        )
    if mode & 0o700 != 0o700:
        return _problem(
            folder, f"is not open to you, its owner (mode {mode:04o})", f"chmod 700 {quoted}"
        )
    return None


def _entry_problem(path: Path) -> ConfigurationError | None:
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        return _problem(path, f"cannot be reached: {error.strerror or error}", "")
    folder = path.name in FOLDERS
    wanted, test = ("a folder", stat.S_ISDIR) if folder else ("a regular file", stat.S_ISREG)
    quoted = shlex.quote(str(path))
    if stat.S_ISLNK(info.st_mode):
        return _problem(
            path,
            "is a symbolic link: dshweb follows no link in its data folder",
            f"put {'the folder' if folder else 'the file'} itself there, or move the link away",
        )
    if not test(info.st_mode):
        return _problem(
            path,
            f"is {_kind(info.st_mode)}, not {wanted}",
            f"move it away: mv {quoted} {shlex.quote(str(path) + '.moved')}",
        )
    if info.st_uid != os.geteuid():
        return _not_yours(path, info.st_uid, "what dshweb reads there", "chown")
    mode = stat.S_IMODE(info.st_mode)
    private = FOLDER_MODE if folder else FILE_MODE
    if mode & _OTHERS_WRITE:
        return _problem(
            path,
            f"is writable by others (mode {mode:04o}): they could have changed it",
            f"check it, then: chmod {private:o} {quoted}",
        )
    needs = FOLDER_MODE if folder else stat.S_IRUSR if path.name in KEY_FILES else FILE_MODE
    if mode & needs != needs:
        return _problem(
            path, f"is not open to you, its owner (mode {mode:04o})", f"chmod {private:o} {quoted}"
        )
    return None


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
