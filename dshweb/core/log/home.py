"""Where DSH keeps things (DSH_FACTS §1): the home, its sessions and their log files.

Discovery only lists files; it never opens a log for writing and never takes
``session.lock``. Liveness is read passively from the kernel's lock table.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dshweb.core.errors import HomeError

_LOG_NAME = re.compile(r"^session(?:\.v(\d+))?\.jsonl(\.zstd)?$")
LOCK_NAME = "session.lock"
REPLAY_LOCK_NAME = ".dshweb-replay.lock"
"""The lock dshweb's demo holds in a session folder of its own demo home while it replays a
recorded session into it (:mod:`dshweb.demo.replay`): that session shows live while it
grows, as it would under DSH. No folder of a DSH home has one; DSH's ``session.lock``
is never taken."""
LIVE_LOCK_NAMES = (LOCK_NAME, REPLAY_LOCK_NAME)
PROC_LOCKS = Path("/proc/locks")


def dsh_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$DSH_HOME``, else ``~/.dsh``; an empty value counts as unset, like DSH."""
    env = os.environ if environ is None else environ
    value = env.get("DSH_HOME", "")
    return Path(value).expanduser() if value else Path.home() / ".dsh"


@dataclass(frozen=True, slots=True)
class LogFile:
    """The newest generation of one session's log."""

    path: Path
    version: int
    compressed: bool

    @property
    def session_dir(self) -> Path:
        return self.path.parent


def newest_log(session_dir: Path) -> LogFile | None:
    """The highest ``session.vN`` generation in a session folder (``*.tmp`` ignored; only
    regular files count: DSH never makes a log a symbolic link)."""
    best: LogFile | None = None
    try:
        with os.scandir(session_dir) as scan:
            entries = list(scan)
    except OSError:
        return None
    for entry in entries:
        match = _LOG_NAME.match(entry.name)
        if match is None or not _regular(entry):
            continue  # only a regular file is a log: a FIFO or device would block a read
        candidate = LogFile(session_dir / entry.name, int(match[1] or 0), bool(match[2]))
        if best is None or (candidate.version, candidate.compressed) > (
            best.version,
            best.compressed,
        ):
            best = candidate
    return best


def _regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SEPARATORS = frozenset("/\\:")
_PROJECT_KEY_MAX = 251


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _escape(unit: int) -> str:
    char = chr(unit)
    return char if char in _SAFE else f"~{unit:04X}"


def project_folder(cwd: str | None) -> str:
    """The folder DSH files a session's ``cwd`` under: ``--projectKey(cwd)--``.

    Per UTF-16 unit: a run of ``/``, ``\\`` or ``:`` becomes one ``-``;
    ``[A-Za-z0-9._-]`` stay; anything else (and ``~``) becomes ``~`` + 4 upper-case hex
    digits. Leading ``-`` are stripped, empty is ``root``, the key is cut to 251
    characters. No cwd at all is ``_no-cwd``.
    """
    if cwd is None:
        return "_no-cwd"
    parts: list[str] = []
    in_run = False
    for unit in _utf16_units(cwd):
        separator = chr(unit) in _SEPARATORS
        if not separator:
            parts.append(_escape(unit))
        elif not in_run:
            parts.append("-")
        in_run = separator
    key = "".join(parts).lstrip("-")
    return f"--{(key or 'root')[:_PROJECT_KEY_MAX]}--"


def encode_segment(value: str) -> str:
    """A session id as its folder name: the projectKey escaping, no separator folding;
    ``.`` alone is ``~002E`` and ``..`` is ``~002E~002E``."""
    if value in (".", ".."):
        return "~002E" * len(value)
    return "".join(_escape(unit) for unit in _utf16_units(value))


def filed_as(session_id: str, cwd: str | None) -> str:
    """The folder, relative to the home, where DSH files session ``session_id`` of
    ``cwd`` (a copy of a session's folder elsewhere in the home is somewhere else)."""
    return f"sessions/{project_folder(cwd)}/{encode_segment(session_id)}"


def check_home(home: Path) -> None:
    """Raise :class:`HomeError` with a one-line reason unless ``home`` can be read."""
    if not home.exists():
        raise HomeError(f"DSH home {home} does not exist")
    if not home.is_dir():
        raise HomeError(f"DSH home {home} is not a folder")
    if not os.access(home, os.R_OK | os.X_OK):
        raise HomeError(f"DSH home {home} is not readable")
    sessions = home / "sessions"
    if sessions.exists() and not os.access(sessions, os.R_OK | os.X_OK):
        raise HomeError(f"{sessions} is not readable")


def session_logs(home: Path) -> list[LogFile]:
    """Every session log under ``home/sessions/--project--/<session>/`` (a link where a
    folder should be is not followed: DSH never makes one)."""
    root = home / "sessions"
    found: list[LogFile] = []
    if not is_folder(root):
        return found
    for project in _subdirs(root):
        for session_dir in _subdirs(project):
            log = newest_log(session_dir)
            if log is not None:
                found.append(log)
    return found


def session_folders(project: Path) -> list[Path]:
    """The session folders of one project folder (none when it is a link)."""
    return list(_subdirs(project)) if is_folder(project) else []


def is_folder(path: Path) -> bool:
    """``path`` is a folder itself, not a link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _subdirs(folder: Path) -> Iterable[Path]:
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    # Siblings sort by name as their paths would, without comparing the paths part by part.
    return [folder / name for name in names]


def lock_holders(proc_locks: Path = PROC_LOCKS) -> dict[tuple[int, int], frozenset[int]]:
    """(device, inode) of every file some process holds a lock on, from ``/proc/locks``,
    with the ids of the processes the kernel names as holding it (an open file
    description's lock shows ``-1``)."""
    try:
        text = proc_locks.read_text()
    except OSError:
        return {}
    held: dict[tuple[int, int], set[int]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            key = (os.makedev(int(major, 16), int(minor, 16)), int(inode))
            pid = int(fields[4])
        except ValueError:
            continue
        held.setdefault(key, set()).add(pid)
    return {key: frozenset(pids) for key, pids in held.items()}


def locked_files(proc_locks: Path = PROC_LOCKS) -> frozenset[tuple[int, int]]:
    """(device, inode) of every file some process holds a lock on, from ``/proc/locks``."""
    return frozenset(lock_holders(proc_locks))


def lock_stat(session_dir: Path | str) -> os.stat_result | None:
    """The ``stat`` of a session's ``session.lock`` (or, in dshweb's demo home, of its
    replay's lock): never opened or taken; None without one."""
    for name in LIVE_LOCK_NAMES:
        try:
            return os.stat(os.path.join(session_dir, name))
        except OSError:
            continue
    return None


def is_live(session_dir: Path, held: frozenset[tuple[int, int]]) -> bool:
    """True while some process holds the session's lock (checked without taking it)."""
    st = lock_stat(session_dir)
    if st is None:
        return False
    return (st.st_dev, st.st_ino) in held or any(ino == st.st_ino for _, ino in held)
