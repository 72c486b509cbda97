"""Parked sessions (HomeIndex.park): a session laid by as its fold checkpoint shows and
folds on exactly as one that never was, whatever its log does meanwhile."""

from __future__ import annotations

import dataclasses
import gc
import random
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.fold.checkpoint import CheckpointCodec
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.budget import Budget
from dshweb.core.log.home import session_logs
from tests.support.homes import SHAPES, home_of_fixtures
from tests.support.logbuilder import frames_of


@pytest.fixture
def cut(tmp_path: Path) -> tuple[Path, dict[Path, bytes]]:
    """A home of every shape whose zstd logs stop at a random frame, and the rest of each."""
    home = home_of_fixtures(tmp_path / "home", SHAPES)
    rng = random.Random(7)
    rest: dict[Path, bytes] = {}
    for log in session_logs(home):
        if log.compressed:
            frames = frames_of(log.path)
            at = rng.randint(1, len(frames) - 1) if len(frames) > 1 else 1
            log.path.write_bytes(b"".join(frames[:at]))
            rest[log.path] = b"".join(frames[at:])
    return home, rest


def _shots(index: HomeIndex) -> dict[Path, dict[str, Any]]:
    return {f: dataclasses.asdict(index.snapshot(f)) for f in sorted(index.folders)}


def _both(home: Path) -> tuple[HomeIndex, HomeIndex]:
    """The home folded by an index that parks and one that never does."""
    parking, plain = HomeIndex(home, codec=CheckpointCodec()), HomeIndex(home)
    parking.refresh()
    plain.refresh()
    return parking, plain


def _park_all(index: HomeIndex) -> None:
    for folder in list(index.trackers):
        assert index.park(folder) is not None, folder
    assert not index.trackers


@pytest.fixture
def parked(cut: tuple[Path, dict[Path, bytes]]) -> tuple[Path, HomeIndex, HomeIndex]:
    """The cut home folded by an index that parked every session and by one that never
    parks."""
    home, _ = cut
    parking, plain = _both(home)
    _park_all(parking)
    return home, parking, plain


def test_a_parked_session_shows_and_folds_on_as_one_never_parked(
    cut: tuple[Path, dict[Path, bytes]],
) -> None:
    home, rest = cut
    parking, plain = _both(home)
    versions = {f: parking.version(f) for f in parking.folders}
    _park_all(parking)
    assert len(parking.parked) == len(session_logs(home)) >= len(SHAPES)
    assert {f: parking.version(f) for f in parking.folders} == versions  # shown as it was
    assert _shots(parking) == _shots(plain)
    assert not parking.trackers  # a snapshot takes a parked session back for a moment only

    unchanged = parking.refresh()
    assert unchanged == set() and not parking.trackers  # nothing changed: none taken back

    grown = {path.parent for path, more in rest.items() if more}
    assert grown
    for path, more in rest.items():
        with path.open("ab") as handle:
            handle.write(more)
    assert parking.refresh() == plain.refresh() == grown
    assert set(parking.trackers) == grown  # taken back to fold what the log gained
    assert all(parking.offset(f) == plain.offset(f) != 0 for f in plain.folders)
    assert _shots(parking) == _shots(plain)


def test_a_log_rewritten_while_parked_is_folded_from_its_start(
    parked: tuple[Path, HomeIndex, HomeIndex],
) -> None:
    home, parking, _ = parked
    logs = sorted((log for log in session_logs(home) if log.compressed), key=lambda g: g.path)
    # Same path and size, other bytes: the first frames of another session's log.
    target, other = logs[0].path, logs[-1].path
    size = target.stat().st_size
    data = (other.read_bytes() * (size // other.stat().st_size + 1))[:size]
    target.write_bytes(data)
    assert parking.refresh() == {target.parent}
    fresh = HomeIndex(home)
    fresh.refresh()
    assert _shots(parking) == _shots(fresh)


def test_a_parked_session_touched_shows_anew_and_a_gone_one_is_dropped(
    parked: tuple[Path, HomeIndex, HomeIndex],
) -> None:
    _, parking, plain = parked
    before = {f: parking.version(f) for f in parking.folders}
    parking.settings = None  # the profile read again as if it had moved
    moved = parking.refresh(reload_profile=True)
    assert moved == set(before)
    assert all(parking.version(f) != before[f] for f in before)  # every view is taken again
    assert not parking.trackers and _shots(parking) == _shots(plain)

    gone = min(parking.folders)
    for path in gone.iterdir():
        path.unlink()
    gone.rmdir()
    assert gone in parking.refresh() and gone not in parking.folders
    assert parking.version(gone) is None and parking.offset(gone) is None


def test_only_a_session_folded_to_its_end_is_parked(tmp_path: Path) -> None:
    home = home_of_fixtures(tmp_path / "home", ["prune-heavy"])
    never = HomeIndex(home)  # no codec: nothing is parked
    never.refresh()
    (folder,) = never.folders
    assert never.park(folder) is None and not never.parked and folder in never.trackers

    sliced = HomeIndex(home, codec=CheckpointCodec(), budget=Budget(events=50, bytes=1 << 30))
    sliced.refresh()
    assert folder in sliced.unfinished
    assert sliced.park(folder) is None  # more to fold: not laid by
    while sliced.unfinished:
        sliced.refresh()
    assert sliced.park(folder) is not None and folder in sliced.parked
    assert sliced.park(folder) is None  # parked already


def test_a_tracker_let_go_is_freed_at_once(tmp_path: Path) -> None:
    """No reference cycle: a parked tracker's memory comes back when it is dropped, not
    at a collection, which never comes for what ``gc.freeze()`` froze (the hub does)."""
    home = home_of_fixtures(tmp_path / "home", ["prune-heavy"])
    (log,) = session_logs(home)
    tracker = SessionTracker(log)
    tracker.refresh()
    assert tracker.header and tracker.meter.events > 0
    gc.collect()
    gc.disable()
    try:
        del tracker
        assert gc.collect() == 0
    finally:
        gc.enable()
