"""A whole DSH home followed at once: one :class:`SessionTracker` per session log.

``refresh()`` rescans the session folders (new sessions, new generations, deletions),
or only the folders it is told changed, folds what each log gained, and returns the
folders whose state changed. A log whose ``stat`` is what it was at its last fold is not
opened again, and the profile's patch layers are read again only when asked (or on a
full rescan), so a pass over an unchanged home costs one ``stat`` per session. Every
tracker carries a ``version`` that grows with each change, so a publisher can tell what
it has not shown yet whoever did the folding.
With a ``budget``, each log folds at most that much per refresh; the logs left
``unfinished`` are folded on at every refresh, whatever it was told changed, so a home
followed on one thread gets back to its other sessions after each slice of a big or
expensive log.
One bad session never stops the others: its error is kept on its own snapshot.
With a ``codec``, a session nothing changes can be parked (:meth:`~HomeIndex.park`): its
tracker laid by as its fold checkpoint (a few kilobytes instead of tens), taken back
when its log changes, or for a moment when a snapshot of it is asked for.
As each session folds, its recent pace is noted by its model (:class:`HomePaces`): a
session too young to have a pace of its own is forecast by the others'.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from dshweb.core.fold.forecast import NEED
from dshweb.core.fold.home_pace import HomePaces
from dshweb.core.log.budget import UNBOUNDED, Budget
from dshweb.core.log.home import (
    LogFile,
    check_home,
    is_folder,
    lock_holders,
    lock_stat,
    newest_log,
    session_folders,
    session_logs,
)
from dshweb.core.profile.effective import (
    BandRule,
    EffectiveSettings,
    EngineConfig,
    SettingsSource,
    SettingsTable,
    settings_table,
)

if TYPE_CHECKING:  # the fold is imported when the first log is (a home may have none)
    from dshweb.core.fold.session import SessionSnapshot, SessionTracker

DEFAULT_PROFILE = "sdk"

Signature = tuple[int, int, int, int, int]
"""A log's device, inode, size, mtime and ctime (ns): unchanged means nothing to fold."""
Identity = tuple[int, int]
_UNSEEN = (-1, -1, -1, -1, -1)
_touches = itertools.count(-1, -1)
"""The versions of parked sessions touched (negative: never a tracker's own)."""


class TrackerCodec(Protocol):
    """How a parked tracker is laid by and taken back: a fold checkpoint
    (:class:`~dshweb.core.fold.checkpoint.CheckpointCodec`)."""

    @property
    def key(self) -> bytes:
        """What its checkpoints are signed with (a cold read's workers sign theirs with it
        too, so what they send is parked as it came)."""
        ...

    def encode(self, tracker: SessionTracker) -> bytes: ...

    def decode(self, log: LogFile, blob: bytes) -> SessionTracker | None:
        """The tracker ``blob`` holds while ``log`` is still the log it folded, else None."""
        ...


@dataclass(frozen=True, slots=True)
class Parked:
    """A session laid by: its tracker as a fold checkpoint, and what is asked of it
    without taking it back."""

    log: LogFile
    blob: bytes
    offset: int
    """The bytes of the log folded (progress)."""
    version: int
    """The tracker's version: a snapshot taken of it before it was parked still holds."""


def log_signature(path: Path) -> Signature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def lock_identity(folder: Path) -> Identity | None:
    """The (device, inode) of a session's lock (:func:`~dshweb.core.log.home.lock_stat`)."""
    st = lock_stat(folder)
    return None if st is None else (st.st_dev, st.st_ino)


@dataclass(slots=True)
class HomeIndex:
    home: Path
    profile: str = DEFAULT_PROFILE
    stop_after_seq: int | None = None
    extra_patches: tuple[Path, ...] = ()
    trackers: dict[Path, SessionTracker] = field(default_factory=dict)
    settings: SettingsTable | None = None
    """Each session's compaction and band settings, by its profile and agent preset."""
    live: frozenset[Path] = frozenset()
    signatures: dict[Path, Signature | None] = field(default_factory=dict)
    """Each log's ``stat`` when it was last folded."""
    locks: dict[Path, Identity | None] = field(default_factory=dict)
    """Each session's lock file, re-read whenever its folder is looked at."""
    lock_folders: dict[int, set[Path]] = field(default_factory=dict)
    """The folders by their lock file's inode, for a liveness read that costs what the
    kernel's lock table holds, not what the home holds."""
    profile_loaded: bool = False
    budget: Budget = UNBOUNDED
    """The most one log folds per refresh."""
    unfinished: set[Path] = field(default_factory=set)
    """The folders whose log holds more than its last refresh folded."""
    paces: HomePaces = field(default_factory=HomePaces)
    """The sessions' recent paces by model: the young sessions' forecasts go by them."""
    name_holder: Callable[[frozenset[int]], str | None] = lambda pids: None
    """Who holds a live session's lock, by the ids of the processes that hold it: a name
    a page says (a ``dsh web`` this process runs, ``"dsh-web"``), or None for anyone."""
    held_by: dict[Path, str] = field(default_factory=dict)
    """The live sessions whose holder has a name (:attr:`name_holder`)."""
    codec: TrackerCodec | None = None
    """How sessions are parked (:meth:`park`); None: none is."""
    parked: dict[Path, Parked] = field(default_factory=dict)
    """The sessions laid by as their checkpoints: not in :attr:`trackers`."""

    @property
    def folders(self) -> set[Path]:
        """Every session folder followed, parked or not."""
        return self.trackers.keys() | self.parked.keys()

    def offset(self, folder: Path) -> int | None:
        """How far the folder's log is folded (None: not followed)."""
        tracker = self.trackers.get(folder)
        if tracker is not None:
            return tracker.tail.offset
        parked = self.parked.get(folder)
        return None if parked is None else parked.offset

    def version(self, folder: Path) -> int | None:
        """The version of the folder's state (None: not followed)."""
        tracker = self.trackers.get(folder)
        if tracker is not None:
            return tracker.version
        parked = self.parked.get(folder)
        return None if parked is None else parked.version

    def park(self, folder: Path, blob: bytes | None = None) -> bytes | None:
        """Lay the folder's tracker by as its checkpoint (``blob``, when the caller holds
        one of exactly this state; else encoded now); the blob, or None when it is not
        parked: no codec, not followed, not folded to its end or to a frame's end."""
        tracker = self.trackers.get(folder)
        if (
            self.codec is None
            or tracker is None
            or tracker.unfinished
            or tracker.tail.mid_frame
            or tracker.before_event is not None
        ):
            return None
        if blob is None:
            try:
                blob = self.codec.encode(tracker)
            except ValueError:
                return None
        self.parked[folder] = Parked(tracker.log, blob, tracker.tail.offset, tracker.version)
        del self.trackers[folder]
        return blob

    def blob(self, folder: Path) -> bytes | None:
        """A parked folder's checkpoint (None: not parked)."""
        parked = self.parked.get(folder)
        return None if parked is None else parked.blob

    def _taken_back(self, parked: Parked) -> SessionTracker | None:
        """The tracker ``parked`` holds, at its version; None when the log is no longer
        the one it folded."""
        assert self.codec is not None
        tracker = self.codec.decode(parked.log, parked.blob)
        if tracker is not None:
            tracker.version = parked.version
            tracker.settings_of = self._settings
        return tracker

    def _unpark(self, folder: Path) -> SessionTracker:
        """Take a parked folder's tracker back for good."""
        tracker = self._taken_back(self.parked[folder])
        if tracker is None:
            return self._afresh(folder)
        del self.parked[folder]
        self.trackers[folder] = tracker
        return tracker

    def _afresh(self, folder: Path) -> SessionTracker:
        """A parked folder whose log is no longer the one it folded: a new tracker in its
        place, folded from the start at the next refresh."""
        from dshweb.core.fold.session import SessionTracker

        log = self.parked.pop(folder).log
        tracker = SessionTracker(
            log, stop_after_seq=self.stop_after_seq, settings_of=self._settings
        )
        tracker.unfinished = True
        self.unfinished.add(folder)
        self.signatures.pop(folder, None)
        self.trackers[folder] = tracker
        return tracker

    def _still_parked(self, folder: Path, log: LogFile, signature: Signature | None) -> bool:
        """Whether a parked folder stays parked: its log unchanged. Else it is taken back
        to fold what the log gained, or dropped for a new log (a new generation)."""
        parked = self.parked[folder]
        if parked.log != log:
            del self.parked[folder]
            return False
        known = self.signatures.get(folder, _UNSEEN)
        # Parked as it was taken back from a checkpoint, never looked at since: unchanged
        # if its size is what was folded.
        if signature is not None and (
            signature == known or (known is _UNSEEN and signature[2] == parked.offset)
        ):
            self.signatures[folder] = signature
            return True
        self._unpark(folder)
        return False

    def touch(self, folder: Path) -> None:
        """Mark the folder's snapshot changed (a new version), parked or not."""
        tracker = self.trackers.get(folder)
        if tracker is not None:
            tracker.touch()
        elif (parked := self.parked.get(folder)) is not None:
            self.parked[folder] = replace(parked, version=next(_touches))

    def refresh(
        self,
        changed: Iterable[Path] | None = None,
        *,
        reload_profile: bool = False,
        on_folded: Callable[[Path, LogFile], object] | None = None,
        logs: Iterable[LogFile] | None = None,
    ) -> set[Path]:
        """Fold what the logs gained; the session folders whose state changed.

        ``changed`` names paths known to have changed (files or folders anywhere under
        ``sessions/``); without it every session folder is rescanned (or ``logs``, a
        rescan the caller just made) and the profile read again. The ``unfinished``
        folders are folded on either way. ``on_folded`` is called after each log looked
        at (progress).
        """
        check_home(self.home)
        updated: set[Path] = set()
        if (reload_profile or changed is None or not self.profile_loaded) and self._load_engine():
            updated.update(self.folders)  # every compaction point and band may have moved
        if changed is None:
            found = {log.session_dir: log for log in (logs or session_logs(self.home))}
            gone = self.folders - found.keys()
        else:
            found, gone = {}, set()
            for folder in self._session_folders(changed) | self.unfinished:
                log = newest_log(folder) if is_folder(folder) else None  # never a link
                if log is None:
                    gone.add(folder)
                else:
                    found[folder] = log
        for folder, log in found.items():
            self._set_lock(folder, lock_identity(folder))
            signature = log_signature(log.path)
            if folder in self.parked and self._still_parked(folder, log, signature):
                if on_folded is not None:
                    on_folded(folder, log)
                continue
            tracker = self.trackers.get(folder)
            if tracker is None or tracker.log != log:
                from dshweb.core.fold.session import SessionTracker

                tracker = SessionTracker(
                    log, stop_after_seq=self.stop_after_seq, settings_of=self._settings
                )
                self.trackers[folder] = tracker
                updated.add(folder)
            elif (
                signature is not None
                and signature == self.signatures.get(folder)
                and not tracker.unfinished
            ):
                if on_folded is not None:
                    on_folded(folder, log)
                continue
            self.signatures[folder] = signature
            was_unfinished = folder in self.unfinished
            if tracker.refresh(self.budget) or (was_unfinished and not tracker.unfinished):
                updated.add(folder)  # changed, or now folded to its end
                self._note_pace(folder, tracker)
            if tracker.unfinished:
                self.unfinished.add(folder)
            else:
                self.unfinished.discard(folder)
            if on_folded is not None:
                on_folded(folder, log)
        for folder in gone:  # each looked at: no round over every session of the home
            self.unfinished.discard(folder)
            if self.trackers.pop(folder, None) is None and self.parked.pop(folder, None) is None:
                continue
            self.paces.forget(folder)
            self.signatures.pop(folder, None)
            self._set_lock(folder, None)
            self.locks.pop(folder, None)
            updated.add(folder)
        return updated

    def _set_lock(self, folder: Path, lock: Identity | None) -> None:
        old = self.locks.get(folder)
        if old == lock:
            return
        if old is not None:
            owners = self.lock_folders.get(old[1], set())
            owners.discard(folder)
            if not owners:
                self.lock_folders.pop(old[1], None)
        if lock is not None:
            self.lock_folders.setdefault(lock[1], set()).add(folder)
        self.locks[folder] = lock

    def adopt(self, folder: Path, tracker: SessionTracker) -> None:
        """Take a tracker restored from elsewhere (a checkpoint) as the folder's state;
        the next refresh folds what its log gained since."""
        tracker.settings_of = self._settings
        self.trackers[folder] = tracker
        self.parked.pop(folder, None)
        self.signatures.pop(folder, None)
        self._note_pace(folder, tracker)

    def folded(self, log: LogFile) -> SessionTracker:
        """``log`` folded to its end under this index's settings, kept nowhere: a cold
        read's worker sends it on (:mod:`dshweb.core.fold.spread`)."""
        from dshweb.core.fold.session import SessionTracker

        tracker = SessionTracker(
            log, stop_after_seq=self.stop_after_seq, settings_of=self._settings
        )
        tracker.refresh()
        return tracker

    def _note_pace(self, folder: Path, tracker: SessionTracker) -> None:
        self.paces.note(
            folder, tracker.meter.model, tracker.activity.last_time, tracker.pace.growth
        )

    def _session_folders(self, changed: Iterable[Path]) -> set[Path]:
        root = self.home / "sessions"
        folders: set[Path] = set()
        for path in changed:
            try:
                parts = path.relative_to(root).parts
            except ValueError:
                continue
            if len(parts) >= 2:
                folders.add(root / parts[0] / parts[1])
            elif len(parts) == 1:  # a project folder came or went: every session in it
                project = root / parts[0]
                folders.update(f for f in self.folders if f.parent == project)
                folders.update(session_folders(project))
            else:
                folders.update(self.folders)
                folders.update(log.session_dir for log in session_logs(self.home))
        return folders

    def _load_engine(self) -> bool:
        """Read the profile's settings again; True when they changed what is shown."""
        table = settings_table(self.home, self.profile, self.extra_patches)
        moved = table != self.settings
        if moved:
            for folder in self.folders:
                self.touch(folder)
        self.settings = table
        self.profile_loaded = True
        return moved

    def refresh_liveness(self) -> set[Path]:
        """Re-read which sessions some process holds, and who; the folders whose liveness
        or named holder changed.

        Reads the kernel's lock table once and matches it against the lock files seen
        when each folder was last looked at: no ``stat`` per session.
        """
        holders: dict[Path, frozenset[int]] = {}
        for (_, inode), pids in lock_holders().items():
            for folder in self.lock_folders.get(inode, ()):
                if folder in self.trackers or folder in self.parked:
                    holders[folder] = holders.get(folder, frozenset()) | pids
        live = frozenset(holders)
        held_by = {
            folder: name
            for folder, pids in holders.items()
            if (name := self.name_holder(pids)) is not None
        }
        flipped = set(live ^ self.live)
        flipped |= {
            f for f in held_by.keys() | self.held_by.keys() if held_by.get(f) != self.held_by.get(f)
        }
        self.live = live
        self.held_by = held_by
        for folder in flipped:
            self.touch(folder)
        return flipped

    def settings_of(self, tracker: SessionTracker) -> tuple[SettingsSource, EffectiveSettings]:
        """The profile (and agent preset) a session runs under, and what it sets."""
        if self.settings is None:
            self._load_engine()
        assert self.settings is not None
        return self.settings.of(tracker.preset)

    def _settings(self, tracker: SessionTracker) -> tuple[EngineConfig | None, BandRule]:
        settings = self.settings_of(tracker)[1]
        return settings.engine, settings.rule

    def snapshot(self, folder: Path) -> SessionSnapshot:
        """The folder's session now (a parked one taken back for the moment)."""
        tracker = self.trackers.get(folder)
        if tracker is None:
            tracker = self._taken_back(self.parked[folder]) or self._afresh(folder)
        source, settings = self.settings_of(tracker)
        from dshweb.core.fold.session import take_snapshot

        return take_snapshot(
            tracker,
            home=self.home,
            live=folder in self.live,
            held_by=self.held_by.get(folder),
            engine=settings.engine,
            source=source,
            rule=settings.rule,
            extra_errors=(settings.error,) if settings.error else (),
            pruner=settings.pruner,
            models=settings.models,
            prior=self.paces.prior(folder, tracker.meter.model)
            if len(tracker.pace.growth) < NEED
            else (),
        )

    def snapshots(self) -> list[SessionSnapshot]:
        """Every session, newest activity first (liveness read now)."""
        self.refresh_liveness()
        shots = [self.snapshot(folder) for folder in self.folders]
        return sorted(shots, key=lambda s: (-(s.last_time or 0), s.session_id))
