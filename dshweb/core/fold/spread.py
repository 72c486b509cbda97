"""A cold read spread over every core: worker processes fold shares of the logs, and this
process folds shares too while it adopts what they send.

Folding is pure Python, so threads would take turns on one core; processes each fold a
share of a home's logs instead. A worker folds each log of its share to its end with the
same settings the home's index would give it (:meth:`HomeIndex.folded`) and sends the
session's whole fold state back as a fold checkpoint
(:func:`~dshweb.core.fold.checkpoint.dump_checkpoint`), signed with the key the index
parks sessions with (or one made for this one read). This process restores each
(:func:`~dshweb.core.fold.checkpoint.load_checkpoint`: the same log, the same bytes) and
adopts it, exactly as a restart adopts the checkpoints it saved, so the state is the one
a single process folds; the index's next refresh folds what a log gained meanwhile. A
log a worker could not fold, or whose state does not restore, is left to that refresh.

This process is one of the processes counted: with ``cores`` of them, ``cores - 1``
workers start, and between their results it folds the smallest logs left itself, one at
a time, keeping what it folds without a checkpoint's round trip. The workers take the
biggest first, so no process is left with the last big log while the others idle. A home
smaller than :data:`MIN_BYTES` is not worth the workers' start (each imports the fold
afresh: about a third of a second).
"""

from __future__ import annotations

import multiprocessing
import os
import secrets
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

from dshweb.core.fold.checkpoint import dump_checkpoint, load_checkpoint
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import LogFile

MIN_BYTES = 64 << 20
"""The least a home's logs weigh (on disk) before its cold read is spread."""
STOP_EVERY = 0.25
"""How often (seconds) a read waiting on its workers looks whether it is to stop."""
SHARE_BYTES = 2 << 20
"""About how much of the logs one share holds (a bigger log is a share of its own): small
enough that every process finishes within a share of the others (about 0.1 s of fold),
big enough that sending one costs nothing. On a 1,000-session home (208 MB on disk, two
processes) shares of 1, 2 and 4 MB read it in the same time, and of 16 MB 8% slower."""


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def worth_spreading(logs: Sequence[LogFile], cores: int) -> bool:
    """Whether a cold read of ``logs`` goes faster spread over ``cores`` processes."""
    return cores > 1 and len(logs) > 1 and sum(_size(log) for log in logs) >= MIN_BYTES


@dataclass(frozen=True, slots=True)
class _Share:
    """What a worker needs to fold its logs as the home's index would."""

    home: Path
    profile: str
    extra_patches: tuple[Path, ...]
    stop_after_seq: int | None
    logs: tuple[LogFile, ...]
    key: bytes


def fold_spread(
    index: HomeIndex,
    logs: Sequence[LogFile],
    *,
    cores: int,
    on_folded: Callable[[Path, LogFile], object] | None = None,
    on_blob: Callable[[Path, SessionTracker, bytes], object] | None = None,
    stopped: Callable[[], bool] = lambda: False,
) -> set[Path]:
    """Fold ``logs`` over ``cores`` processes (this one and ``cores - 1`` workers) into
    ``index``; the session folders folded. ``on_folded`` is called after each log folded
    (or left to the index); ``on_blob`` with each tracker a worker sent and its
    checkpoint, signed with the key of the index's codec (if it has one: the index can
    park it as it came); ``stopped`` ends the read early (the workers are ended, what
    was folded stays). A worker that dies leaves the share it held to the index, and
    the shares not sent yet to this process."""
    key = index.codec.key if index.codec is not None else secrets.token_bytes(32)
    queue = deque(
        _Share(index.home, index.profile, index.extra_patches, index.stop_after_seq, part, key)
        for part in _shares(logs)
    )
    folded: set[Path] = set()

    def taken(log: LogFile, tracker: SessionTracker | None, blob: bytes | None = None) -> None:
        if tracker is not None:
            index.adopt(log.session_dir, tracker)
            folded.add(log.session_dir)
            if blob is not None and on_blob is not None:
                on_blob(log.session_dir, tracker, blob)
        if on_folded is not None:
            on_folded(log.session_dir, log)

    count = max(1, min(cores - 1, len(queue)))
    context = multiprocessing.get_context("spawn")  # the caller may run threads: no fork
    workers = ProcessPoolExecutor(count, mp_context=context)
    try:
        pending: set[Future[list[tuple[LogFile, bytes | None]]]] = set()
        broken = False
        while (queue or pending) and not stopped():
            # Two shares a worker: one under way, one waiting, so none idles while this
            # process folds. Once the workers cannot take any (one died), this process
            # folds what is left.
            while queue and not broken and len(pending) < 2 * count:
                try:
                    pending.add(workers.submit(_fold_share, queue[0]))
                except (BrokenProcessPool, RuntimeError):
                    broken = True
                else:
                    queue.popleft()
            done, pending = wait(
                pending, timeout=0 if queue else STOP_EVERY, return_when=FIRST_COMPLETED
            )
            for future in done:
                try:
                    results = future.result()
                except Exception:  # a worker died: the index folds its share itself
                    continue
                for log, blob in results:
                    tracker = load_checkpoint(log, blob, key=key) if blob is not None else None
                    taken(log, tracker, blob)
            if not done and queue:  # the smallest log left, here
                last = queue.pop()
                if len(last.logs) > 1:
                    queue.append(replace(last, logs=last.logs[:-1]))
                taken(last.logs[-1], _folded(index, last.logs[-1]))
    finally:
        _end(workers)
    return folded


def _folded(index: HomeIndex, log: LogFile) -> SessionTracker | None:
    try:
        return index.folded(log)
    except Exception:  # the index folds it again, and says what is wrong with it
        return None


def _end(workers: ProcessPoolExecutor) -> None:
    """Stop ``workers`` now: no share waits, none under way is finished."""
    workers.shutdown(wait=False, cancel_futures=True)
    processes = getattr(workers, "_processes", None) or {}  # not public: ended if there
    for process in list(processes.values()):
        process.terminate()


def _shares(logs: Sequence[LogFile]) -> list[tuple[LogFile, ...]]:
    """``logs`` cut into shares of about :data:`SHARE_BYTES`, the biggest logs first."""
    shares: list[tuple[LogFile, ...]] = []
    part: list[LogFile] = []
    weight = 0
    for size, log in sorted(((_size(log), log) for log in logs), key=lambda s: -s[0]):
        part.append(log)
        weight += size
        if weight >= SHARE_BYTES:
            shares.append(tuple(part))
            part, weight = [], 0
    if part:
        shares.append(tuple(part))
    return shares


def _size(log: LogFile) -> int:
    try:
        return os.stat(log.path).st_size
    except OSError:
        return 0


_index: HomeIndex | None = None
"""A worker's index of the home it folds for (its settings, read once)."""


def _fold_share(share: _Share) -> list[tuple[LogFile, bytes | None]]:
    """In a worker: each log of ``share`` folded to its end, as a checkpoint (``None``
    for one it could not fold or checkpoint: the caller's index folds it)."""
    global _index
    index = _index
    if index is None or (
        index.home,
        index.profile,
        index.extra_patches,
        index.stop_after_seq,
    ) != (share.home, share.profile, share.extra_patches, share.stop_after_seq):
        index = _index = HomeIndex(
            share.home,
            profile=share.profile,
            stop_after_seq=share.stop_after_seq,
            extra_patches=share.extra_patches,
        )
    return list(_fold_each(index, share))


def _fold_each(index: HomeIndex, share: _Share) -> Iterator[tuple[LogFile, bytes | None]]:
    for log in share.logs:
        try:
            yield log, dump_checkpoint(index.folded(log), key=share.key)
        except Exception:  # the caller's index folds it, and says what is wrong with it
            yield log, None
