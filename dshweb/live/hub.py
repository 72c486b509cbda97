"""One hub per DSH home: it alone folds, and everyone else reads what it holds.

The hub owns the home's :class:`~dshweb.core.fold.index.HomeIndex` (its trackers, the
profile's compaction point), the band each session is in, and a thread that follows the
home: kernel file notifications for what changed, a liveness read of the kernel's lock
table every second, and a cheap ``stat`` round every :data:`RESCAN_EVERY` seconds that folds
nothing unchanged. After every round it publishes a new :class:`HomeView`, an immutable
value that pages, sockets and the settings preview read without a lock and without ever
folding, and tells its listeners which sessions changed.

A cold start first takes back each session's fold state from the checkpoints saved by
the last run (:mod:`dshweb.collect.checkpoints`), then folds what the logs gained since,
publishing what is folded so far with its :class:`FoldProgress` every
:data:`PROGRESS_EVERY` seconds, so the first page is served at once. Fold state is
checkpointed every :data:`CHECKPOINT_EVERY` seconds for the sessions that changed.

What a supervisor asks of it: :attr:`Hub.round_at` (when the last round ended),
:attr:`Hub.read_through_at` (when every log had first been folded to its end, or the home
found unreadable: readiness, :mod:`dshweb.live.readiness`) and :meth:`Hub.alive` (its
thread at work of late: systemd's watchdog, :mod:`dshweb.live.systemd`).

No log is folded more than :data:`FOLD_SLICE` at a time: what a big or expensive log
holds beyond that is folded a slice per round, the rounds coming back to back (the file
notifications looked at between them), so every other session's update waits for one
slice at most, not for the whole log.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path, PurePosixPath
from typing import Protocol

from dshweb.core.errors import DshError
from dshweb.core.fold.checkpoint import CheckpointCodec
from dshweb.core.fold.forecast import NEED
from dshweb.core.fold.gauge import ContextGauge, context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.progress import FoldProgress, ProgressCounter
from dshweb.core.fold.session import SessionSnapshot, SessionTracker
from dshweb.core.fold.spread import fold_spread, usable_cores, worth_spreading
from dshweb.core.listing.homes import DEFAULT_HOME_NAME
from dshweb.core.listing.pages import SessionList
from dshweb.core.listing.tree import REBUILD_SHARE, HomeTree, SessionEntry
from dshweb.core.log.home import LogFile, filed_as, session_logs
from dshweb.dsh_web.managed import name_holder
from dshweb.live.timing import (
    BACKOFF_MAX,
    CHECKPOINT_EVERY,
    FOLD_SLICE,
    LIVENESS_EVERY,
    MISSING_HOME_RETRY,
    NOTIFY_MAX_MS,
    NOTIFY_STEP_MS,
    POLL_EVERY,
    PROGRESS_EVERY,
    RESCAN_EVERY,
    TICK,
)
from dshweb.live.watch import HomeWatch

log = logging.getLogger(__name__)

RESTORE_BATCH = 500
"""A restart publishes and parks the sessions it takes back this many at a time."""


@dataclass(frozen=True, slots=True)
class SessionView:
    """One session as last folded: its snapshot and its gauge (the band held with
    hysteresis against the gauge this view replaced)."""

    snapshot: SessionSnapshot
    gauge: ContextGauge
    version: int
    read_to_end: bool = True
    """The log is folded to its end; False while a big log is still read in slices (its
    snapshot then shows the session's past, not what is happening now)."""


@dataclass(frozen=True)
class HomeView:
    """Every session of the home at one moment, or why the home cannot be read.

    Immutable: the hub publishes a new one after each round; derived orders are computed
    once per view, on first use: the sessions list's tree from the last view whose tree
    was laid out and the sessions touched since (``basis``, see :func:`view_basis`).
    """

    home: Path
    sessions: Mapping[str, SessionView] = field(default_factory=dict)
    error: str | None = None
    progress: FoldProgress = field(default_factory=FoldProgress)
    version: int = 0
    name: str = DEFAULT_HOME_NAME
    """The home's name on the dashboard (:mod:`dshweb.core.listing.homes`)."""
    basis: TreeBasis | None = field(default=None, compare=False, repr=False)
    unreadable: tuple[str, ...] = ()
    """Each folder of the home that could not be read, and why (its sessions are not
    shown; the rest of the home is)."""

    @cached_property
    def snapshots(self) -> tuple[SessionSnapshot, ...]:
        """Every session, newest activity first."""
        shots = [view.snapshot for view in self.sessions.values()]
        return tuple(sorted(shots, key=lambda s: (-(s.last_time or 0), s.session_id)))

    @cached_property
    def home_tree(self) -> HomeTree:
        """The sessions list's order, by group (:class:`~dshweb.core.listing.tree.HomeTree`)."""
        basis, sessions = self.basis, self.sessions
        if basis is not None:
            tree = basis.view.home_tree.updated(sessions, basis.touched)
            object.__setattr__(self, "basis", None)  # the older view is no longer needed
            return tree
        return HomeTree.build(
            list(self.snapshots), lambda s: sessions[s.session_id].gauge, self.name
        )

    @property
    def tree(self) -> tuple[SessionEntry, ...]:
        """The sessions list's order: sub-agents under their parents."""
        return self.home_tree.entries

    @cached_property
    def listing(self) -> SessionList:
        """The sessions list's pages and counts (:mod:`dshweb.core.listing.pages`)."""
        return SessionList(trees=[self.home_tree])

    def session(self, session_id: str) -> SessionSnapshot | None:
        view = self.sessions.get(session_id)
        return view.snapshot if view is not None else None


@dataclass(frozen=True, slots=True)
class TreeBasis:
    """What a view's tree is made from: an earlier view of the home whose tree is laid
    out, and the sessions changed, added or removed since."""

    view: HomeView
    touched: frozenset[str]


def view_basis(previous: HomeView, touched: Iterable[str]) -> TreeBasis | None:
    """The basis of the view that follows ``previous`` with ``touched`` sessions changed:
    ``previous`` when its tree is laid out, else its own basis with these sessions added
    (one older view is kept, never a chain of them); None, to lay the tree out from
    nothing, when too much has changed or no tree was ever laid out."""
    if previous.error is None and "home_tree" in previous.__dict__:
        return TreeBasis(previous, frozenset(touched))
    basis = previous.basis
    if basis is None:
        return None
    union = basis.touched.union(touched)
    if len(union) * REBUILD_SHARE > len(previous.sessions):
        return None
    return TreeBasis(basis.view, union)


@dataclass(frozen=True, slots=True)
class HomeChange:
    """What one round changed, for the hub's listeners."""

    view: HomeView
    changed: frozenset[str]
    removed: frozenset[str]


Listener = Callable[[HomeChange], object]


class ChangeSource(Protocol):
    """What tells its listeners of a home's changes: a :class:`Hub`, or a collector's
    writer (:mod:`dshweb.collect.collector`), which passes a change on once it is in the
    database."""

    def subscribe(self, listener: Listener) -> Callable[[], None]: ...

    def view(self) -> HomeView | None:
        """The last view published to the listeners (``None``: none yet): where a listener
        that subscribes late starts."""
        ...


class CheckpointStore(Protocol):
    """Where fold state outlives the process (:mod:`dshweb.collect.checkpoints`); its
    blobs are also how the hub parks the sessions nothing changes
    (:meth:`~dshweb.core.fold.index.HomeIndex.park`)."""

    def restore(
        self, home: Path, logs: Mapping[Path, LogFile]
    ) -> Iterator[tuple[Path, SessionTracker, bytes]]:
        """The trackers saved for ``home``'s session folders whose log is still the one
        ``logs`` lists (by folder), one at a time, each with its blob; every other
        checkpoint is dropped."""
        ...

    @property
    def key(self) -> bytes: ...

    def encode(self, tracker: SessionTracker) -> bytes: ...

    def decode(self, log: LogFile, blob: bytes) -> SessionTracker | None: ...

    def save(self, home: Path, blobs: Mapping[Path, bytes]) -> None: ...

    def forget(self, home: Path, folders: Iterable[Path]) -> None: ...


def _by_id(
    before: Mapping[str, SessionView], taken: Iterable[SessionView]
) -> dict[str, SessionView]:
    """The sessions by id: ``before`` with the views ``taken`` again (a copy, not a round
    over every folder); where two folders hold one id, the one :func:`_shown_over` the
    other."""
    sessions = dict(before)
    for view in taken:
        held = sessions.get(view.snapshot.session_id)
        if held is None or held.snapshot.path == view.snapshot.path or _shown_over(view, held):
            sessions[view.snapshot.session_id] = view
    return sessions


def _shown_over(view: SessionView, other: SessionView) -> bool:
    """Whether ``view`` is shown rather than ``other``, a folder holding the same session
    id (a copy of a session's folder elsewhere in the home): the folder DSH files the
    session in, then the newer activity, then the first path."""
    return _precedence(view) < _precedence(other)


def _precedence(view: SessionView) -> tuple[bool, int, str]:
    shot = view.snapshot
    folder = str(PurePosixPath(shot.path).parent)
    return (folder != filed_as(shot.session_id, shot.cwd), -(shot.last_time or 0), shot.path)


class Hub:
    def __init__(
        self,
        home: Path,
        profile: str,
        *,
        store: CheckpointStore | None = None,
        extra_patches: tuple[Path, ...] = (),
        name: str = DEFAULT_HOME_NAME,
        cores: int | None = None,
    ) -> None:
        self.index = HomeIndex(
            home,
            profile=profile,
            extra_patches=extra_patches,
            budget=FOLD_SLICE,
            name_holder=name_holder,  # a session held by the dsh web this process runs
            # Sessions nothing changes are parked as their checkpoints (_park).
            codec=store if store is not None else CheckpointCodec(),
        )
        self.name = name
        """The home's name, carried by every view (:mod:`dshweb.core.listing.homes`)."""
        self.store = store
        self.cores = usable_cores() if cores is None else cores
        """The processes a cold read of a big home is spread over
        (:mod:`dshweb.core.fold.spread`); 1: this one alone."""
        self.rounds = 0
        """Fold rounds made (instrumentation: a request never adds one)."""
        self.round_at: float | None = None
        """When the last round ended (``time.monotonic()``; ``None``: none yet)."""
        self.read_through_at: float | None = None
        """When every log of the home had first been folded to its end since the start, or
        the home was found unreadable (``time.monotonic()``; ``None``: not yet): what the
        process's readiness waits for (:mod:`dshweb.live.readiness`)."""
        self._beat = time.monotonic()
        """The hub's thread last showed it is at work (a turn of its loop, a log folded)."""
        self._fold_lock = threading.Lock()
        self._by_folder: dict[Path, SessionView] = {}
        self._view = HomeView(home, name=name)
        self._ready = threading.Event()
        self._listeners: list[Listener] = []
        self._dirty: set[Path] = set()
        """The folders changed since their checkpoint was last saved."""
        self._stirred: set[Path] = set()
        """The folders changed since the last :meth:`flush_checkpoints`: the others are
        parked by it."""
        self._blobs: dict[Path, tuple[int, bytes]] = {}
        """A checkpoint made of a tracker, by the version it was made at: what parks it
        while that version holds, without encoding it again."""
        self._checkpoints_down = False
        self._stop = threading.Event()
        self._watch: HomeWatch | None = None
        self._unreadable: tuple[str, ...] = ()
        self._thread: threading.Thread | None = None
        self._started_at: float | None = None
        self._progress = FoldProgress()
        self._catching_up: ProgressCounter | None = None
        """The cold start's count while logs it read only in part are folded on."""

    @property
    def home(self) -> Path:
        return self.index.home

    @property
    def profile(self) -> str:
        return self.index.profile

    # -- reading (any thread, never folds) -----------------------------------------------

    def view(self) -> HomeView:
        return self._view

    def wait_ready(self, timeout: float) -> HomeView:
        """The view, once the first round has ended, or once ``timeout`` s have passed since
        the hub started: the first pages of a start wait for a round that ends quickly (a
        restart from checkpoints gives them a complete page); a page asked for later in a
        long cold start is served what is folded so far at once, not after a wait."""
        started = self._started_at
        left = timeout if started is None else started + timeout - time.monotonic()
        if left > 0:
            self._ready.wait(left)
        return self._view

    def alive(self, within: float) -> bool:
        """Whether the hub's thread runs and has been at work in the last ``within``
        seconds (a turn of its loop, a log of a cold start folded, a retry of a home it
        cannot read): what a watchdog asks (:mod:`dshweb.live.systemd`)."""
        thread = self._thread
        return thread is not None and thread.is_alive() and time.monotonic() - self._beat < within

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` (from the hub's thread) after each round that changed
        something, and after each publish of a cold start's progress (the fold's lock is
        held then: a listener must not wait on the hub); returns the function that
        unsubscribes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # -- the thread ---------------------------------------------------------------------

    def start(self) -> Hub:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._started_at = self._beat = time.monotonic()
            self._thread = threading.Thread(target=self._run, name="dshweb-hub", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        watch = self._watch
        if watch is not None:
            watch.wake()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self.flush_checkpoints()

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            self._beat = time.monotonic()
            try:
                self.cold_start()
                self.flush_checkpoints()  # what the cold start folded, kept at once
                # The fold state is long-lived: keep the collector from walking it again
                # and again (a full collection over a big home costs a second of CPU).
                gc.freeze()
                self._follow()
                backoff = 1.0
            except (DshError, FileNotFoundError) as problem:
                self._publish_error(str(problem))
                self._stop.wait(MISSING_HOME_RETRY)
            except Exception:
                log.exception("the hub of %s failed; starting over in %.0f s", self.home, backoff)
                self._stop.wait(backoff)
                backoff = min(BACKOFF_MAX, backoff * 2)

    def _follow(self) -> None:
        home = self.home
        if not home.is_dir():
            raise FileNotFoundError(home)
        now = time.monotonic()
        last_liveness = last_checkpoint = now
        last_rescan = now - RESCAN_EVERY  # the first batch comes once the watch is set up:
        # a full round then catches what changed between the cold start and that moment
        with HomeWatch(home) as watch:
            self._watch = watch
            try:
                self._follow_with(watch, last_liveness, last_checkpoint, last_rescan)
            finally:
                self._watch = None

    def _follow_with(
        self, watch: HomeWatch, last_liveness: float, last_checkpoint: float, last_rescan: float
    ) -> None:
        home = self.home
        step, longest = NOTIFY_STEP_MS / 1000, NOTIFY_MAX_MS / 1000
        while not self._stop.is_set():
            self._beat = time.monotonic()
            # No wait at all while a log is folded a slice at a time.
            batch = watch.wait(0.001 if self.index.unfinished else TICK, step=step, longest=longest)
            if batch is None:
                return
            now = time.monotonic()
            paths: set[Path] | None = {p for p in batch.paths if _relevant(home, p)}
            reload_profile = bool(paths) and any(
                not p.is_relative_to(home / "sessions") for p in paths or ()
            )
            rescan = batch.overflow or now - last_rescan >= (
                RESCAN_EVERY if watch.notified else POLL_EVERY
            )
            if rescan:
                watch.rescan()
                paths, last_rescan = None, now
            if rescan or batch.paths:  # nothing else changes what the watch cannot read
                self._unreadable = _unreadable_words(home, watch.unreadable)
            liveness = now - last_liveness >= LIVENESS_EVERY
            if liveness:
                last_liveness = now
            if paths or paths is None or liveness or reload_profile or self.index.unfinished:
                self.sync(
                    None if reload_profile else paths,
                    liveness=liveness,
                    reload_profile=reload_profile,
                )
            if now - last_checkpoint >= CHECKPOINT_EVERY:
                last_checkpoint = now
                self.flush_checkpoints()

    # -- folding (the hub's thread, or a test / the CLI calling ``sync``) ---------------

    def cold_start(self) -> HomeView:
        """Take back the checkpoints, then fold what every log gained since, publishing
        what is folded so far and its progress as it goes."""
        with self._fold_lock:
            logs = session_logs(self.home) if self.home.is_dir() else []
            restored = self._restore(logs)
            counter = ProgressCounter(logs, restored)
            self._progress = counter.now()
            last_publish = time.monotonic()
            folded: list[Path] = []

            def on_folded(folder: Path, entry: LogFile) -> None:
                nonlocal last_publish
                self._beat = time.monotonic()
                self._count(counter, folder)
                folded.append(folder)
                if time.monotonic() - last_publish >= PROGRESS_EVERY:
                    last_publish = time.monotonic()
                    self._progress = counter.now()
                    # What was folded since the last publish, told to the listeners at once
                    # (a collector writes it, a socket shows it) though the fold goes on.
                    self._notify(self._publish(folded))
                    self._park(folded)  # what was folded so far, shown: laid by
                    folded.clear()
                    # What is folded so far lives as long as the hub: without this every
                    # full collection walks it all again, a tenth of a cold start.
                    gc.freeze()

            fresh = [log for log in logs if log.session_dir not in restored]
            if worth_spreading(fresh, self.cores):
                # What the workers folded is new to the checkpoints too.
                self._dirty |= fold_spread(
                    self.index,
                    fresh,
                    cores=self.cores,
                    on_folded=on_folded,
                    on_blob=self._made,
                    stopped=self._stop.is_set,
                )
            changed = self.index.refresh(None, on_folded=on_folded, logs=logs)
            self.index.refresh_liveness()
            self._round_ended()
            self._catching_up = counter if self.index.unfinished else None
            self._progress = counter.now(done=self._catching_up is None)
            self._stir(changed)
            self._young_caught_up()
            change = self._publish(self.index.folders | changed)
            self._park(list(self.index.trackers))
        self._ready.set()
        self._notify(change)
        return change.view

    def sync(
        self,
        changed: Iterable[Path] | None = None,
        *,
        liveness: bool = True,
        reload_profile: bool = False,
    ) -> HomeView:
        """Fold what changed (the ``changed`` paths, or the whole home) and a slice of
        each log not folded to its end yet, and publish."""
        with self._fold_lock:
            counter = self._catching_up
            try:
                folders = self.index.refresh(
                    changed,
                    reload_profile=reload_profile,
                    on_folded=None if counter is None else partial(self._count, counter),
                )
            except (DshError, OSError) as problem:
                change = self._publish_error_locked(str(problem))
            else:
                if counter is not None:
                    self._catching_up = counter if self.index.unfinished else None
                    self._progress = counter.now(done=self._catching_up is None)
                if liveness:
                    folders |= self.index.refresh_liveness()
                self._round_ended()
                self._stir(folders)
                change = self._publish(folders)
        self._ready.set()
        self._notify(change)
        return change.view

    def _round_ended(self) -> None:
        self.rounds += 1
        self.round_at = self._beat = time.monotonic()

    def _young_caught_up(self) -> None:
        """The young sessions (fewer steps than their forecast needs) whose forecast went
        by the home's paces as they were when it was taken, part way through a cold
        start: touched, to be taken again by the paces of the whole home, so that a
        restart shows what a cold start shows (lock held)."""
        paces = self.index.paces
        for folder, view in self._by_folder.items():
            shot = view.snapshot
            forecasts = shot.forecasts
            if len(forecasts.growth) < NEED and forecasts.prior != paces.prior(folder, shot.model):
                self.index.touch(folder)

    def _stir(self, folders: Iterable[Path]) -> None:
        """Note ``folders`` changed: their checkpoints are due, and they are not parked
        at the next flush."""
        self._dirty.update(folders)
        self._stirred.update(folders)

    def _count(self, counter: ProgressCounter, folder: Path, _log: LogFile | None = None) -> None:
        index = self.index
        offset = index.offset(folder)
        if offset is None:
            counter.folded(folder, 0)
        else:
            counter.folded(folder, offset, finished=folder not in index.unfinished)

    def _publish(self, folders: Iterable[Path]) -> HomeChange:
        """A new view with the snapshots of ``folders`` taken again (lock held)."""
        index = self.index
        changed: set[str] = set()
        removed: set[str] = set()
        taken: list[SessionView] = []
        for folder in folders:
            version = index.version(folder)
            old = self._by_folder.get(folder)
            if version is None:
                if old is not None:
                    del self._by_folder[folder]
                    removed.add(old.snapshot.session_id)
                continue
            read_to_end = folder not in index.unfinished
            if old is not None and (old.version, old.read_to_end) == (version, read_to_end):
                continue
            snapshot = index.snapshot(folder)
            gauge = context_gauge(snapshot)
            taken_view = SessionView(snapshot, gauge, version, read_to_end)
            self._by_folder[folder] = taken_view
            taken.append(taken_view)
            changed.add(snapshot.session_id)
            if old is not None and old.snapshot.session_id != snapshot.session_id:
                removed.add(old.snapshot.session_id)
        old_view = self._view
        if (
            not (changed or removed or old_view.error)
            and old_view.progress == self._progress
            and old_view.unreadable == self._unreadable
        ):
            self._read_through(old_view)
            return HomeChange(old_view, frozenset(), frozenset())  # keep what readers cached
        if removed:  # a session went: another folder may hold its id
            sessions = _by_id({}, self._by_folder.values())
        else:
            sessions = _by_id(old_view.sessions, taken)
        removed -= sessions.keys()
        self._view = HomeView(
            index.home,
            sessions,
            None,
            self._progress,
            old_view.version + 1,
            self.name,
            view_basis(old_view, changed | removed),
            self._unreadable,
        )
        self._read_through(self._view)
        return HomeChange(self._view, frozenset(changed), frozenset(removed))

    def _read_through(self, published: HomeView) -> None:
        """Note when the first view out that shows every log folded to its end, or why the
        home cannot be read: readiness holds from then on, never before its readers see it."""
        if self.read_through_at is None and (published.progress.done or published.error):
            self.read_through_at = time.monotonic()

    def _publish_error(self, message: str) -> None:
        with self._fold_lock:
            change = self._publish_error_locked(message)
        self._ready.set()
        self._notify(change)

    def _publish_error_locked(self, message: str) -> HomeChange:
        if self._view.error == message:
            return HomeChange(self._view, frozenset(), frozenset())
        self._view = HomeView(
            self.home, {}, message, self._progress, self._view.version + 1, self.name
        )
        self._read_through(self._view)  # the pages say why: waiting would change nothing
        self._by_folder.clear()
        self._blobs.clear()
        self.index.trackers.clear()
        self.index.parked.clear()
        self.index.signatures.clear()
        self.index.unfinished.clear()
        self._catching_up = None
        return HomeChange(self._view, frozenset(), frozenset())

    def _notify(self, change: HomeChange) -> None:
        if not (change.changed or change.removed) and change.view.error is None:
            return
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:
                log.exception("a hub listener failed")

    # -- checkpoints --------------------------------------------------------------------

    def _restore(self, logs: Iterable[LogFile]) -> dict[Path, int]:
        """Take back the checkpoints (lock held): each session published and parked as it
        comes, so a restart never holds every tracker at once; how far each restored
        log is folded."""
        index = self.index
        if self.store is None or index.trackers or index.parked:
            return {}
        restored: dict[Path, int] = {}
        batch: list[Path] = []
        try:
            with _uncollected():
                by_folder = {log.session_dir: log for log in logs}
                for folder, tracker, blob in self.store.restore(self.home, by_folder):
                    index.adopt(folder, tracker)
                    self._made(folder, tracker, blob)
                    restored[folder] = tracker.tail.offset
                    batch.append(folder)
                    if len(batch) >= RESTORE_BATCH:
                        self._lay_by(batch)
                self._lay_by(batch)
        except Exception:  # what was taken back stays; the rest is folded afresh
            log.exception("could not read the fold checkpoints of %s; folding afresh", self.home)
        return restored

    def _lay_by(self, batch: list[Path]) -> None:
        """Publish ``batch``'s sessions and park them (lock held); empties ``batch``."""
        self._notify(self._publish(batch))
        self._park(batch)
        batch.clear()

    def _made(self, folder: Path, tracker: SessionTracker, blob: bytes) -> None:
        """``blob`` is a checkpoint of ``tracker`` as it is now: what parks it."""
        self._blobs[folder] = (tracker.version, blob)

    def _park(self, folders: Iterable[Path]) -> None:
        """Lay by the trackers of ``folders`` that no process holds (lock held): as the
        checkpoint made of them at their version, or as one made now. A parked session is
        taken back when its log changes (:meth:`HomeIndex.park`)."""
        index = self.index
        for folder in folders:
            tracker = index.trackers.get(folder)
            if tracker is None or folder in index.live:
                continue
            made = self._blobs.pop(folder, None)
            index.park(folder, made[1] if made is not None and made[0] == tracker.version else None)

    def flush_checkpoints(self) -> int:
        """Save the fold state of every session that changed since the last save, and
        park the sessions that did not change since the last flush."""
        with self._fold_lock:
            index = self.index
            trackers = index.trackers
            quiet = trackers.keys() - self._stirred
            self._stirred = set()
            if self.store is None:
                self._park(quiet)
                return 0
            # A log folded to the middle of a frame has no offset to resume from: it is
            # saved once its slices reach the frame's end.
            held = {f for f in self._dirty if f in trackers and trackers[f].tail.mid_frame}
            dirty, self._dirty = self._dirty - held, held
            blobs: dict[Path, bytes] = {}
            gone: list[Path] = []
            for folder in dirty:
                blob = index.blob(folder)  # a parked session's state is its blob
                tracker = trackers.get(folder)
                if blob is None and tracker is not None:
                    blob = self.store.encode(tracker)
                    self._made(folder, tracker, blob)
                if blob is not None:
                    blobs[folder] = blob
                elif tracker is None:
                    gone.append(folder)
                    self._blobs.pop(folder, None)
            self._park(quiet)
        try:
            self.store.save(self.home, blobs)
            if gone:
                self.store.forget(self.home, gone)
        except Exception as error:
            # Only a store in a database fails this way; the hub itself needs no Django.
            from dshweb.live.outage import database_unreachable

            if not database_unreachable(error):
                log.exception("could not save the fold checkpoints of %s", self.home)
            elif not self._checkpoints_down:  # once per outage: kept, saved when it is back
                log.warning("fold checkpoints of %s wait for the database", self.home)
            self._checkpoints_down = database_unreachable(error)
            with self._fold_lock:
                self._dirty.update(dirty)
            return 0
        self._checkpoints_down = False
        return len(blobs)


@contextlib.contextmanager
def _uncollected() -> Iterator[None]:
    """No garbage collection while what is read under it is built, and none walking it
    afterwards: it lives as long as the hub (the fold checkpoints of every session; at
    5,000 sessions, collections walking what was already restored took more than half a
    restore). Building it makes next to no cyclic garbage."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        gc.freeze()


def _relevant(home: Path, path: Path) -> bool:
    """Session logs, folders and lock files, and what sets the compaction point (the
    watch reports nothing else)."""
    return not (path.is_relative_to(home / "sessions") and path.name.endswith(".tmp"))


def _unreadable_words(home: Path, unreadable: Mapping[Path, str]) -> tuple[str, ...]:
    """Each folder the watch could not read, as a person reads it (relative to the home)."""
    return tuple(
        f"{folder.relative_to(home) if folder.is_relative_to(home) else folder} {reason}"
        for folder, reason in sorted(unreadable.items())
    )
