"""What the hub watches in a DSH home, and only that.

The folders the hub reads, each watched on its own (never a whole tree): the home, its
``sessions/`` and every project and session folder in it, its ``profiles/``, every
profile folder and its ``node_modules`` (and the ``@scope`` folders in it, where a
plugin's link comes and goes). A folder is watched only as what it is: a link where a
folder should be is not followed (``IN_DONT_FOLLOW``, ``IN_ONLYDIR``), so a link to ``/``
costs nothing; a folder that cannot be read is set aside in :attr:`HomeWatch.unreadable`
with the reason and tried again at each :meth:`HomeWatch.rescan`, and the rest of the home
is watched as before.

:meth:`HomeWatch.wait` gives the paths that changed as one batch: it ends once the file
system has been quiet for ``step`` seconds, or ``longest`` seconds after the first
change; ``overflow`` says the kernel dropped events (a full round is due). Without
inotify (not Linux, ``WATCHFILES_FORCE_POLLING``, WSL's Windows drives, or the kernel's
watch limit reached) :attr:`HomeWatch.notified` is False and the hub's ``stat`` round is
all there is, run every :data:`~dshweb.live.timing.POLL_EVERY` seconds.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import select
import struct
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from watchfiles.main import _default_force_polling

from dshweb.core.profile.profile import MODULES, PROFILE_FILES

log = logging.getLogger(__name__)

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")
_READ_SIZE = 1 << 16


class Role(Enum):
    """What a watched folder is; what its entries are follows from it."""

    HOME = "home"
    SESSIONS = "sessions"
    PROJECT = "project"
    SESSION = "session"
    PROFILES = "profiles"
    PROFILE = "profile"
    MODULES = "modules"
    SCOPE = "scope"

    def child(self, name: str) -> Role | None:
        """The role of the folder ``name`` inside a folder of this role (None: not read)."""
        if self is Role.HOME:
            return _HOME_CHILDREN.get(name)
        if self is Role.PROFILE:
            return Role.MODULES if name == MODULES else None
        if self is Role.MODULES:
            return Role.SCOPE if name.startswith("@") else None
        return _CHILD.get(self)

    def tells(self, name: str) -> bool:
        """Whether a change of the entry ``name`` of such a folder matters to the hub."""
        if self is Role.HOME:
            return name in _HOME_CHILDREN or name in PROFILE_FILES
        if self is Role.PROFILE:
            return name in PROFILE_FILES or name == MODULES
        return True


_HOME_CHILDREN = {"sessions": Role.SESSIONS, "profiles": Role.PROFILES}
_CHILD = {Role.SESSIONS: Role.PROJECT, Role.PROJECT: Role.SESSION, Role.PROFILES: Role.PROFILE}


@dataclass(slots=True)
class Batch:
    paths: set[Path] = field(default_factory=set)
    overflow: bool = False
    """Events were lost: only a full round is sure to see everything."""


class _Inotify:
    """The three inotify calls of the C library."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self._init = libc.inotify_init1
        self._add = libc.inotify_add_watch
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._rm = libc.inotify_rm_watch
        self.fd = self._call(self._init, os.O_NONBLOCK | os.O_CLOEXEC)

    @staticmethod
    def _call(function: ctypes._NamedFuncPointer, *args: object) -> int:
        result = int(function(*args))
        if result < 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))
        return result

    def add(self, path: str) -> int:
        return self._call(self._add, self.fd, os.fsencode(path), MASK)

    def remove(self, wd: int) -> None:
        self._rm(self.fd, wd)  # the folder may be gone already: nothing to undo then

    def close(self) -> None:
        os.close(self.fd)


def inotify_available() -> bool:
    return sys.platform.startswith("linux") and not _default_force_polling(None)


def unreadable_folders(home: Path) -> dict[Path, str]:
    """Each folder of ``home`` the hub would read but cannot, and why (nothing watched)."""
    with HomeWatch(home, notify=False) as walk:
        return dict(walk.unreadable)


class HomeWatch:
    """The folders of one DSH home the hub reads, watched one by one."""

    def __init__(self, home: Path, *, notify: bool = True) -> None:
        self.home = home
        self.unreadable: dict[Path, str] = {}
        """Each folder that could not be watched, and why (a person reads it)."""
        # Folders as strings: a home of 20,000 sessions is 20,000 of them, hashed often.
        self._roles: dict[int, tuple[str, Role]] = {}
        self._watched: dict[str, int] = {}
        self._inotify: _Inotify | None = None
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._full = False
        if notify and inotify_available():
            try:
                self._inotify = _Inotify()
            except OSError as error:
                log.warning("no file notifications (%s): the home is read every few seconds", error)

    @property
    def notified(self) -> bool:
        """Changes are notified (else only the hub's ``stat`` round sees them)."""
        return self._inotify is not None and not self._full

    @property
    def watches(self) -> int:
        return len(self._watched)

    def __enter__(self) -> HomeWatch:
        self.rescan()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        for fd in (self._wake_read, self._wake_write):
            with suppress(OSError):
                os.close(fd)

    def wake(self) -> None:
        """End a :meth:`wait` at once (another thread wants the hub to stop)."""
        with suppress(OSError):  # already woken, or closed
            os.write(self._wake_write, b"x")

    # -- the folders ----------------------------------------------------------------------

    def rescan(self) -> None:
        """Watch every folder the hub reads that is not watched yet (and try again those
        that could not be read)."""
        watched = self._watched  # a watched folder closed since is named until it opens
        self.unreadable = {p: r for p, r in self.unreadable.items() if str(p) in watched}
        self._full = False
        self._add(str(self.home), Role.HOME, [])

    def _add(self, folder: str, role: Role, added: list[str]) -> None:
        """Watch ``folder`` (a ``role``) and the folders the hub reads in it; each folder
        newly watched is appended to ``added``."""
        if folder in self._watched:
            pass  # readable when its watch was set; a change of its mode is told
        elif self._inotify is not None and not self._full:
            try:
                wd = self._inotify.add(folder)
            except OSError as error:
                self._refused(folder, error)
                return
            self._watched[folder] = wd
            self._roles[wd] = (folder, role)
            added.append(folder)
        elif role is Role.SESSION and not os.access(folder, os.R_OK | os.X_OK):
            self._refused(folder, PermissionError(errno.EACCES, "permission denied"))
            return
        if role is not Role.SESSION:
            for name, child in self._children(folder, role):
                self._add(os.path.join(folder, name), child, added)

    def _children(self, folder: str, role: Role) -> list[tuple[str, Role]]:
        try:
            with os.scandir(folder) as entries:
                found = [(e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in entries]
        except FileNotFoundError:
            return []
        except OSError as error:
            self._refused(folder, error)
            return []
        children = []
        for name, is_folder, is_link in found:
            child = role.child(name)
            if child is None:
                continue
            if is_link:
                self.unreadable[Path(folder, name)] = (
                    "is a symbolic link: dshweb follows no link inside a DSH home"
                )
            elif is_folder:
                children.append((name, child))
        return children

    def _refused(self, folder: str, error: OSError) -> None:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return  # gone, or not a folder (a link, a file): nothing below it is read
        if error.errno == errno.ENOSPC:
            if not self._full:
                log.warning(
                    "the kernel's inotify watch limit is reached at %s: the home is read "
                    "every few seconds instead (raise fs.inotify.max_user_watches)",
                    folder,
                )
            self._full = True
            return
        reason = "permission denied" if error.errno == errno.EACCES else error.strerror
        self.unreadable[Path(folder)] = f"cannot be read: {reason}"

    def _forget(self, wd: int) -> None:
        folder, _ = self._roles.pop(wd, (None, None))
        if folder is not None and self._watched.get(folder) == wd:
            del self._watched[folder]

    def _recheck(self, folder: str) -> None:
        if os.access(folder, os.R_OK | os.X_OK):
            self.unreadable.pop(Path(folder), None)
        else:
            self.unreadable[Path(folder)] = "cannot be read: permission denied"

    def _gone(self, folder: str) -> None:
        """``folder`` left its place (deleted, or moved away: its watch would go on
        reporting under this path); a new folder there is watched anew."""
        wd = self._watched.get(folder)
        if wd is not None:
            self._forget(wd)
            if self._inotify is not None:
                self._inotify.remove(wd)

    # -- the events -----------------------------------------------------------------------

    def wait(self, timeout: float, *, step: float, longest: float) -> Batch | None:
        """The paths changed within ``timeout`` seconds, as one batch (empty when none);
        ``None`` when :meth:`wake` was called."""
        batch = Batch()
        deadline = time.monotonic() + timeout
        first: float | None = None
        poller = select.poll()
        poller.register(self._wake_read, select.POLLIN)
        if self._inotify is not None:
            poller.register(self._inotify.fd, select.POLLIN)
        while True:
            now = time.monotonic()
            left = deadline - now if first is None else min(step, first + longest - now)
            if left <= 0:
                return batch
            ready = {fd for fd, _ in poller.poll(left * 1000)}
            if self._wake_read in ready:
                return None
            if not ready:
                if first is not None:
                    return batch  # quiet for a step: the batch is whole
                continue
            self._drain(batch)
            if first is None and (batch.paths or batch.overflow):
                first = time.monotonic()

    def _drain(self, batch: Batch) -> None:
        assert self._inotify is not None
        try:
            data = os.read(self._inotify.fd, _READ_SIZE)
        except BlockingIOError:
            return
        added: list[str] = []
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            offset += _EVENT.size
            name = os.fsdecode(data[offset : offset + length].rstrip(b"\0"))
            offset += length
            if mask & IN_Q_OVERFLOW:
                batch.overflow = True
                continue
            if mask & IN_IGNORED:
                self._forget(wd)
                continue
            folder, role = self._roles.get(wd, (None, None))
            if folder is None or role is None:
                continue
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                batch.paths.add(Path(folder))
                continue
            if not name and mask & IN_ATTRIB:  # its own mode: readable still?
                self._recheck(folder)
                batch.paths.add(Path(folder))
                continue
            if not name or not role.tells(name):
                continue
            path = os.path.join(folder, name)
            batch.paths.add(Path(path))
            child = role.child(name)
            if child is None or not mask & IN_ISDIR:
                continue
            if mask & (IN_DELETE | IN_MOVED_FROM):
                self._gone(path)
            elif mask & (IN_CREATE | IN_MOVED_TO):
                self._add(path, child, added)  # and whatever was made in it meanwhile
        batch.paths.update(map(Path, added))
