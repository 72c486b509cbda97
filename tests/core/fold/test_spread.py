"""A cold read spread over worker processes (dshweb.core.fold.spread): the state it adopts is
the one a single process folds, session for session, torn and hostile logs included."""

from __future__ import annotations

import os
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.fold import spread
from dshweb.core.fold.checkpoint import CheckpointCodec
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot, SessionTracker
from dshweb.core.log.home import LogFile, session_logs
from tests.support.homes import SHAPES, home_of_fixtures


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = home_of_fixtures(tmp_path_factory.mktemp("spread") / "home", SHAPES)
    logs = sorted(session_logs(home), key=lambda log: log.path)
    # A log whose last frame is torn in half (DSH writing it), and one with bytes after
    # its last frame that are no frame at all.
    torn, junk = logs[0].path, logs[1].path
    data = torn.read_bytes()
    torn.write_bytes(data[: len(data) - 40])
    with junk.open("ab") as out:
        out.write(b"\x00not a frame\xff" * 8)
    return home


def _folded_alone(home: Path) -> HomeIndex:
    """``home`` folded by one process, as the index does without workers."""
    index = HomeIndex(home)
    index.refresh()
    return index


def _snapshots(index: HomeIndex) -> dict[Path, SessionSnapshot]:
    return {folder: index.snapshot(folder) for folder in index.folders}


def test_the_spread_read_adopts_every_session_as_one_process_folds_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = session_logs(home)
    assert len(logs) >= len(SHAPES)
    alone = _folded_alone(home)
    assert any(shot.errors for shot in _snapshots(alone).values())  # the junk is told

    # This process folds logs too, between the worker's results (a share a log, so both
    # have some to fold): those never go through a checkpoint.
    monkeypatch.setattr(spread, "SHARE_BYTES", 1)
    here: list[Path] = []
    fold_here = HomeIndex.folded

    def folded(index: HomeIndex, log: LogFile) -> SessionTracker:
        here.append(log.path)
        return fold_here(index, log)

    monkeypatch.setattr(HomeIndex, "folded", folded)
    index = HomeIndex(home, codec=CheckpointCodec())
    sent: dict[Path, bytes] = {}
    adopted = spread.fold_spread(
        index, logs, cores=2, on_blob=lambda folder, _, blob: sent.setdefault(folder, blob)
    )
    assert adopted == set(alone.trackers)  # every session came back, here or from the worker
    assert 1 <= len(here) < len(logs)
    # What a worker sent is signed with the index's own key: it parks as it came.
    assert sent and sent.keys() == adopted - {log.session_dir for log in logs if log.path in here}
    for folder, blob in sent.items():
        assert index.park(folder, blob) == blob
        assert index.snapshot(folder) == alone.snapshot(folder)
    # Here, the smallest first: the worker took the biggest.
    biggest = max(logs, key=lambda log: os.stat(log.path).st_size)
    assert biggest.path not in here
    # Nothing left to fold: the workers folded each log to its end.
    assert all(index.offset(f) == alone.trackers[f].tail.offset for f in adopted)
    index.refresh()
    assert _snapshots(index) == _snapshots(alone)


def test_when_the_workers_take_no_more_this_process_folds_the_rest(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = session_logs(home)
    monkeypatch.setattr(spread, "SHARE_BYTES", 1)  # a share per log
    submit = ProcessPoolExecutor.submit
    taken: list[object] = []

    def submit_once(pool: ProcessPoolExecutor, *args: Any, **kwargs: Any) -> Future[Any]:
        if taken:  # the pool broke after its first share (a worker died)
            raise BrokenProcessPool("a worker died")
        taken.append(args)
        return submit(pool, *args, **kwargs)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", submit_once)
    index = HomeIndex(home)
    folded = spread.fold_spread(index, logs, cores=2)
    alone = _folded_alone(home)
    assert len(taken) == 1
    assert folded == set(alone.trackers)  # the one share sent, and every other here
    index.refresh()
    assert _snapshots(index) == _snapshots(alone)


def test_a_stopped_spread_read_ends_its_workers_and_leaves_the_rest_to_the_index(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = session_logs(home)
    monkeypatch.setattr(spread, "SHARE_BYTES", 1)  # a share per log
    index = HomeIndex(home)
    seen: list[Path] = []
    adopted = spread.fold_spread(
        index,
        logs,
        cores=2,
        on_folded=lambda folder, _log: seen.append(folder),
        stopped=lambda: bool(seen),
    )
    assert 1 <= len(adopted) < len(logs)  # stopped once the first came back
    index.refresh()  # folds the rest
    alone = _folded_alone(home)
    assert _snapshots(index) == _snapshots(alone)


def test_shares_go_biggest_first_and_hold_about_a_share_each(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = session_logs(home)
    sizes = {log: os.stat(log.path).st_size for log in logs}
    monkeypatch.setattr(spread, "SHARE_BYTES", max(sizes.values()) // 2)
    shares = spread._shares(logs)
    assert sorted(log.path for share in shares for log in share) == sorted(log.path for log in logs)
    order = [sizes[log] for share in shares for log in share]
    assert order == sorted(order, reverse=True)
    assert len(shares[0]) == 1  # the biggest log is a share of its own
    assert all(sum(sizes[log] for log in share) >= spread.SHARE_BYTES for share in shares[:-1])
