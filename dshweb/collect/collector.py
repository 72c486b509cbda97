"""A collector: one DSH home's hub in a process of its own, its results in the database.

``manage.py dshweb_collect`` calls :func:`run_collector`, which takes the home's lease
(:mod:`dshweb.collect.lease`), runs a :class:`~dshweb.live.hub.Hub` on it with the fold
checkpoints in the database (a restart, even after ``kill -9``, folds only what the logs
gained since), and:

- writes the sessions each round changed through a :class:`SessionWriter`: one
  transaction per :data:`~dshweb.live.timing.COLLECT_WRITE_EVERY` at most, upserting the
  changed sessions' sealed snapshots and deleting the removed ones, stamped with the
  lease's version (one more per write, so it never goes back across restarts), and only
  while this process still holds the lease (checked in the same transaction);
- announces what each write changed on the channel layer (:mod:`dshweb.live.publisher`),
  after it is committed, so a web worker told of a change reads it from the database;
- runs the commands web workers send to this home's collector over the channel layer
  (:mod:`dshweb.collect.commands`: the Compact button), and the home's alert rules
  (:mod:`dshweb.alerts.watcher`), on the publisher's event loop;
- renews the lease every ``heartbeat_every`` seconds and releases it when told to stop;
- started by systemd (``$NOTIFY_SOCKET``), tells it ``READY=1`` once its home is folded
  through and written, and pings its watchdog while its hub works
  (:class:`CollectorService`).

When it starts it closes the Compact requests a process that is gone left in flight (the
jobs :func:`~dshweb.live.jobs.at_start` lists, as a server's start does).
Told to stop (``dshweb collect`` on SIGTERM or SIGINT asks :mod:`dshweb.live.stopping`'s
stop), it stops its hub and its event loop, writes what is left and releases the lease,
while the alert deliveries and Compact requests in flight get the stop's grace (or are
recorded as interrupted); the process ends within seconds whatever hangs.

When the database cannot be reached (:func:`~dshweb.live.outage.database_unreachable`),
the hub keeps folding and the writer keeps what changed (a set of session ids: rows are
the full latest state, so a session changed ten times meanwhile is written once). The
collector says so once, then tries again with back-off (up to
:data:`~dshweb.live.timing.OUTAGE_RETRY_MAX` seconds): a lease renewal first, the cheap
probe, and once that works, one write of every session changed meanwhile. An outage longer
than the lease's staleness leaves the lease stale but this collector's: if no other
collector took it over meanwhile the renewal simply works (web workers showed the
collector offline until then); if one did, the renewal raises
:class:`~dshweb.collect.lease.LeaseLost` and the collector exits 1, as for any lost lease.
Any other database error is logged with its traceback and retried with back-off.

Rows are the full latest state of a session (latest wins), so a restart that refolds a
change already written writes the same value again, and nothing is lost or doubled.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from django.db import DatabaseError, close_old_connections, transaction
from django.utils import timezone

from dshweb.collect.checkpoints import DatabaseCheckpoints
from dshweb.collect.collected import sealing_key
from dshweb.collect.commands import CollectorPlace, collector_owner, listen_for_commands
from dshweb.collect.lease import Lease, LeaseLost, lease_lost_reason, lease_release, lease_renew
from dshweb.collect.models import CollectedSession, CollectorLease
from dshweb.config import get_config
from dshweb.core.fold.sealed import seal_session
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import LogFile
from dshweb.core.log.jsjson import printable
from dshweb.live import timing
from dshweb.live.hub import HomeChange, HomeView, Hub, Listener
from dshweb.live.jobs import jobs_at_start, jobs_beside_hub
from dshweb.live.outage import Outage, database_unreachable, outage_reason, store_name
from dshweb.live.publisher import Publisher
from dshweb.live.readiness import DATABASE_OUT, hub_reason, redis_reason
from dshweb.live.service import collect_here
from dshweb.live.stopping import stopping
from dshweb.live.systemd import ServiceNotifier

log = logging.getLogger(__name__)
STAND_IN_ID_MAX = 512
"""The longest id a session the database refused is written under."""

TICK = 0.1
"""The collector's loop wakes at a change, or at least this often (heartbeats, stopping)."""
_DELETE_BATCH = 500


class SessionWriter:
    """A hub listener that keeps what changed, and writes it when :meth:`flush` is called."""

    def __init__(self, lease: Lease, key: bytes) -> None:
        self.lease = lease
        self.key = key
        self.writes = 0
        self._lock = threading.Lock()
        self._changes = threading.Event()
        """Set by a change, cleared by the flush that takes it."""
        self._view: HomeView | None = None
        self._published: HomeView | None = None
        """The last view written and published to the listeners."""
        self._changed: set[str] = set()
        self._removed: set[str] = set()
        self._swept = False
        self._error: str | None = None
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` after each committed write, with what it wrote."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def view(self) -> HomeView | None:
        return self._published

    def __call__(self, change: HomeChange) -> None:
        with self._lock:
            self._view = change.view
            self._changed |= change.changed
            self._removed -= change.changed
            self._removed |= change.removed
            self._changed -= change.removed
            if change.view.error is not None:
                self._swept = False  # the hub starts over: sweep again once it is back
            self._changes.set()

    @property
    def pending(self) -> bool:
        """Changes are waiting for the next write."""
        with self._lock:
            return bool(self._changed or self._removed)

    def wait(self, timeout: float) -> None:
        """Until something changed since the last flush, or ``timeout`` seconds."""
        self._changes.wait(timeout)

    def flush(self) -> int:
        """Write what changed since the last flush; the number of sessions written."""
        with self._lock:
            view, changed, removed = self._view, self._changed, self._removed
            self._changed, self._removed = set(), set()
            self._changes.clear()
        if view is None:
            return 0
        sweep = not self._swept and view.error is None and view.progress.done
        if not (changed or removed or sweep or view.error != self._error):
            return 0
        try:
            written, gone, version = self._write(view, changed, removed, sweep=sweep)
        except BaseException:
            with self._lock:  # written next time, unless newer changes say otherwise
                self._changed |= changed - self._removed
                self._removed |= removed - self._changed
                self._changes.set()
            raise
        self._swept = self._swept or sweep
        self._error = view.error
        self.writes += 1
        if written or gone:
            # The version a web worker reads the rows at (the lease's), not the hub's own.
            stamped = dataclasses.replace(view, version=version)
            change = HomeChange(stamped, frozenset(written), frozenset(gone))
            self._published = stamped
            for listener in list(self._listeners):
                try:
                    listener(change)
                except Exception:
                    log.exception("a collector listener failed")
        return len(written)

    def _write(
        self, view: HomeView, changed: set[str], removed: set[str], *, sweep: bool
    ) -> tuple[set[str], set[str], int]:
        sessions = view.sessions
        sealed = {
            sid: seal_session(sessions[sid].snapshot, sessions[sid].gauge, key=self.key)
            for sid in changed
            if sid in sessions
        }
        gone = (removed | changed) - set(sessions)
        name = self.lease.name
        # The write loop's thread keeps its connection from write to write (a new one each
        # time was a tenth of a collector's work, and PostgreSQL's); after a failure the
        # loop drops it (see _follow).
        with transaction.atomic():
            lease = (
                CollectorLease.objects.select_for_update()
                .filter(name=name, token=self.lease.token, released_at__isnull=True)
                .first()
            )
            if lease is None:
                raise LeaseLost(lease_lost_reason(self.lease))
            lease.version += 1
            lease.error = printable(view.error or "")
            lease.save(update_fields=["version", "error"])
            now = timezone.now()
            rows = [
                CollectedSession(
                    home=name, session_id=sid, version=lease.version, blob=blob, updated_at=now
                )
                for sid, blob in sealed.items()
            ]
            stand_ins: set[str] = set()
            try:
                with transaction.atomic():  # a savepoint: one bad row is written alone
                    _upsert(rows)
            except DatabaseError as refused:
                if database_unreachable(refused):
                    raise
                for row in rows:
                    stand_ins.update(self._write_alone(row, view))
            if sweep:  # sessions that went while no collector ran
                kept = CollectedSession.objects.filter(home=name).values_list(
                    "session_id", flat=True
                )
                gone |= set(kept) - set(sessions) - stand_ins
            stale = sorted(gone)
            for start in range(0, len(stale), _DELETE_BATCH):
                batch = stale[start : start + _DELETE_BATCH]
                CollectedSession.objects.filter(home=name, session_id__in=batch).delete()
        return set(sealed), gone, lease.version

    def _write_alone(self, row: CollectedSession, view: HomeView) -> set[str]:
        """One session the database refused in a batch: written alone, or, if it is
        refused again, written with the reason under an id any database takes (its
        ASCII escape, cut short with a digest when long), so it is shown with its error
        and the rest of the home goes on; the id of such a stand-in."""
        try:
            with transaction.atomic():
                _upsert([row])
            return set()
        except DatabaseError as error:
            if database_unreachable(error):
                raise
            reason = f"could not be stored in the database: {error}"
        log.warning("collector %s: session %r %s", self.lease.name, row.session_id, reason)
        shown = view.sessions[row.session_id]
        snapshot = dataclasses.replace(
            shown.snapshot,
            session_id=_stand_in_id(row.session_id),
            errors=(*shown.snapshot.errors, printable(reason)),
        )
        row.session_id = snapshot.session_id
        row.blob = seal_session(snapshot, shown.gauge, key=self.key)
        try:
            with transaction.atomic():
                _upsert([row])
        except DatabaseError:
            log.exception("collector %s: session %r not written", self.lease.name, row.session_id)
            return set()
        return {row.session_id}


def _stand_in_id(session_id: str) -> str:
    escaped = session_id.encode("ascii", "backslashreplace").decode()
    if len(escaped) <= STAND_IN_ID_MAX:
        return escaped
    digest = hashlib.sha256(escaped.encode()).hexdigest()[:16]
    return f"{escaped[: STAND_IN_ID_MAX // 2]}...{digest}"


def _upsert(rows: list[CollectedSession]) -> None:
    CollectedSession.objects.bulk_create(
        rows,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["home", "session_id"],
        update_fields=["version", "blob", "updated_at"],
    )


class CountingCheckpoints(DatabaseCheckpoints):
    """The database's checkpoints, counting what a restart took back from them."""

    def __init__(self) -> None:
        self.resumed: Mapping[Path, int] = {}

    def restore(
        self, home: Path, logs: Mapping[Path, LogFile]
    ) -> Iterator[tuple[Path, SessionTracker, bytes]]:
        resumed: dict[Path, int] = {}
        self.resumed = resumed
        for folder, tracker, blob in super().restore(home, logs):
            resumed[folder] = tracker.tail.offset
            yield folder, tracker, blob


def run_collector(
    *,
    lease: Lease,
    home: Path,
    profile: str,
    stop: threading.Event,
    on_ready: Callable[[str], object] = log.info,
) -> bool:
    """Collect ``home`` under ``lease`` until ``stop`` is set (then release the lease), or
    until the lease is lost (:class:`~dshweb.collect.lease.LeaseLost`, lease kept). Whether
    the lease was released (not when the database could not be reached at the end)."""
    store = CountingCheckpoints()
    hub = Hub(
        home, profile, store=store, name=lease.name, cores=get_config().fold_processes or None
    )
    writer = SessionWriter(lease, sealing_key())
    hub.subscribe(writer)
    hub.subscribe(_ResumeReport(hub, store, lease.name, on_ready))
    place = CollectorPlace(lease.name, home, collector_owner(lease.name, lease.token))
    collect_here(lease.name, hub)  # commands run here act on this home
    for job in jobs_at_start().values():  # what a process that is gone left in flight
        try:
            job()
        except Exception:
            log.exception("collector %s: a start job failed", lease.name)
    stop_publisher = _channels_in_thread(writer, place)
    notifier = ServiceNotifier()
    service = CollectorService(hub, writer, notifier) if notifier.enabled else None
    hub.start()
    lost = released = False
    try:
        _follow(lease, writer, stop, service)
    except LeaseLost:
        lost = True
        raise
    finally:
        hub.stop()
        stop_publisher()
        if not lost:
            released = _last_write(lease, writer)
        close_old_connections()
        stopping.wait_settled()  # the work in flight: finished, or recorded as interrupted
    return released


def _last_write(lease: Lease, writer: SessionWriter) -> bool:
    """Write what is left and release the lease; when the database cannot be reached, say
    so and leave both (the lease goes stale, the next collector folds what is missing)."""
    try:
        try:
            writer.flush()
        finally:
            lease_release(lease)
        return True
    except Exception as error:
        if not database_unreachable(error):
            raise
        log.warning(
            "collector %s: stopped without its last write or releasing the lease: %s is "
            "unavailable (%s)",
            lease.name,
            store_name(),
            outage_reason(error),
        )
        return False


def _follow(
    lease: Lease,
    writer: SessionWriter,
    stop: threading.Event,
    service: CollectorService | None = None,
) -> None:
    now = time.monotonic()
    next_beat = now + lease.heartbeat_every
    next_write = now
    backoff = timing.COLLECT_WRITE_EVERY
    outage = Outage(
        f"collector {lease.name}",
        first=timing.COLLECT_WRITE_EVERY,
        most=timing.OUTAGE_RETRY_MAX,
        log=log,
    )
    while True:
        # A change is written as soon as it comes, unless the last write was less than
        # COLLECT_WRITE_EVERY ago (then when that ends: later changes join it).
        early = next_write - time.monotonic()
        if early > 0:
            stop.wait(min(early, TICK))
        else:
            writer.wait(TICK)
        if stop.is_set():
            break
        if service is not None:
            service.tick(database_out=outage.ongoing)
        now = time.monotonic()
        retrying = outage.ongoing
        if retrying and now < next_write:
            continue
        try:
            if retrying or now >= next_beat:
                if retrying:
                    close_old_connections()  # the broken one; renewing is the cheap probe
                lease_renew(lease)
                next_beat = now + lease.heartbeat_every
                if service is not None:
                    service.answered(now)
            if retrying or now >= next_write:
                writes = writer.writes
                written = writer.flush()  # after an outage: all that changed meanwhile
                if written or retrying:  # else the next change, after a quiet spell, at once
                    next_write = now + timing.COLLECT_WRITE_EVERY
                backoff = timing.COLLECT_WRITE_EVERY
                outage.ended(f"; wrote {written} session(s) changed meanwhile")
                if service is not None and writer.writes > writes:
                    service.answered(now)
        except LeaseLost:
            raise
        except Exception as error:
            if database_unreachable(error):
                next_beat = next_write = now + outage.failed(error)
                continue
            log.exception("collector %s: the database failed; again in %.1f s", lease.name, backoff)
            close_old_connections()  # a new connection for the next try
            next_write = now + backoff
            backoff = min(timing.BACKOFF_MAX, backoff * 2)


class CollectorService:
    """What a collector tells systemd (:mod:`dshweb.live.systemd`), from its write loop:
    ready once its hub has folded the home through, the database has answered since
    (a write or a lease renewal) with nothing left to write, and the team's Redis answers
    a ping; the watchdog's pings while the hub is at work (and this loop turns)."""

    def __init__(self, hub: Hub, writer: SessionWriter, notifier: ServiceNotifier) -> None:
        self.hub, self.writer, self.notifier = hub, writer, notifier
        self._answered_at: float | None = None
        self._next_tick = 0.0

    def answered(self, at: float) -> None:
        """The database answered a write or a renewal begun at ``at`` (monotonic)."""
        self._answered_at = at

    def tick(self, *, database_out: bool) -> None:
        now = time.monotonic()
        if now < self._next_tick:
            return
        self._next_tick = now + self.notifier.every
        hub = self.hub
        self.notifier.tick(
            not_ready=None if self.notifier.ready else self._not_ready(database_out),
            alive=hub.alive(timing.HUB_STALLED_AFTER),
            starting=hub.read_through_at is None,
        )

    def _not_ready(self, database_out: bool) -> str | None:
        if (reason := hub_reason(self.hub)) is not None:
            return reason
        if database_out:
            return DATABASE_OUT
        through, answered = self.hub.read_through_at, self._answered_at
        if self.writer.pending or answered is None or through is None or answered < through:
            return "writing the home to the database"
        return redis_reason()


class _ResumeReport:
    """Says once, after the first full round, how much the checkpoints spared."""

    def __init__(
        self, hub: Hub, store: CountingCheckpoints, name: str, say: Callable[[str], object]
    ) -> None:
        self.hub, self.store, self.name, self.say = hub, store, name, say
        self.done = False

    def __call__(self, change: HomeChange) -> None:
        if self.done or not change.view.progress.done:
            return
        self.done = True
        # The hub's own thread: its trackers are not changing now.
        index = self.hub.index
        folders = index.folders
        resumed = self.store.resumed
        read = sum((index.offset(f) or 0) - resumed.get(f, 0) for f in folders)
        self.say(
            f"collector {self.name}: {len(folders)} session(s), {len(resumed)} resumed "
            f"from checkpoints at {sum(resumed.values())} bytes; read {read} bytes since"
        )


def _channels_in_thread(source: SessionWriter, place: CollectorPlace) -> Callable[[], None]:
    """Run a publisher of ``source``'s writes, the listener of ``place``'s commands and the
    home's alert watcher on an event loop of its own thread; the function that stops them."""
    started = threading.Event()
    loop_box: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]] = []

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop_box.append((asyncio.get_running_loop(), task))
        started.set()
        await asyncio.gather(
            # The writer already writes at most every COLLECT_WRITE_EVERY: announce each write.
            Publisher(source, interval=0.0, only_watched=False).run(),
            listen_for_commands(place),
            # the jobs each app runs beside a home's hub (the alert watcher)
            *(task.make(source, place.name).run() for task in jobs_beside_hub()),
        )

    def target() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(main())

    thread = threading.Thread(target=target, name="dshweb-collector-publisher", daemon=True)
    thread.start()
    started.wait(5)

    def stop() -> None:
        if loop_box:
            loop, task = loop_box[0]
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                loop.call_soon_threadsafe(task.cancel)
        thread.join(5)

    return stop
