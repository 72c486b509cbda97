"""The DSH home the browser tests watch, written the way DSH writes it.

Sessions are copied from the committed fixture homes (real DSH output). A log that a
test will "continue" is cut after some of its zstd frames; the test appends the rest as
DSH does (open for append, write, fsync). A new session file goes in as DSH creates
one: written under a temporary name, then renamed into place. The figures a page must
show are folded from the same bytes with dshweb's own core.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from dshweb.core.fold.gauge import ContextGauge, context_band, context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.log.home import LogFile, session_logs
from tests.conftest import FIXTURE_HOMES
from tests.support.logbuilder import frames_of

PROFILE = "sdk"


def fixture_log(fixture: str, session_id: str | None = None) -> LogFile:
    """The log of session ``session_id`` (default: the fixture's name) in a fixture home."""
    wanted = session_id or fixture
    logs = [log for log in session_logs(FIXTURE_HOMES / fixture) if log.session_dir.name == wanted]
    assert len(logs) == 1, f"no session {wanted!r} in fixture home {fixture!r}"
    return logs[0]


def session_folder(home: Path, log: LogFile) -> Path:
    """Where ``log``'s session folder goes in ``home`` (same project/session names)."""
    return home / "sessions" / log.session_dir.parent.name / log.session_dir.name


def copy_session(home: Path, log: LogFile, *, frames: int | None = None) -> Path:
    """Copy a fixture session folder into ``home``, its log cut after ``frames`` frames."""
    target = session_folder(home, log)
    shutil.copytree(log.session_dir, target)
    if frames is not None:
        (target / log.path.name).write_bytes(b"".join(frames_of(log.path)[:frames]))
    return target / log.path.name


SHAPES = (
    "prune-heavy",
    "subagent-loop",
    "window-switch",
    "plain-turns",
    "resumed-header",
    "cjk-heavy",
    "web-compact-replace",
    "hidden-web-minimal-1",
    "pace-steady",
    "fold-failures",
    "model-switch",
)
"""A fixture of every shape, for a home of many (:func:`home_of_fixtures`): prunes,
sub-agents, model and window switches, plain logs, resumed headers, CJK, a web-driven
compaction, hundreds of folds, young sessions forecast by the others."""


def home_of_fixtures(target: Path, fixtures: Iterable[str]) -> Path:
    """A home at ``target`` of every session of the fixture homes ``fixtures``, with the
    ``auto-compact`` fixture's profiles (``PROFILE`` among them)."""
    (target / "sessions").mkdir(parents=True)
    shutil.copytree(FIXTURE_HOMES / "auto-compact" / "profiles", target / "profiles")
    for name in fixtures:
        for log in session_logs(FIXTURE_HOMES / name):
            copy_session(target, log)
    return target


def show_the_demo(tmp_path: Path, settings: Any, **more: object) -> Path:
    """This process shows the demo home (a copy in its data folder under ``tmp_path``: no
    DSH home), with ``more`` of ``settings.DSHWEB`` set; the copy's path."""
    from dshweb.live.service import own_home

    settings.DSHWEB = {
        **settings.DSHWEB,
        "DSH_HOME": tmp_path / "no-dsh-home",
        "DEMO": True,
        "DATA_DIR": tmp_path / "data",
        **more,
    }
    home = own_home()
    assert home.is_demo
    return home.path


class CutHome:
    """A home holding one fixture session (and its profiles) cut just before the
    ``compaction/start`` of its fold number ``fold``; :meth:`grow` appends the rest, the
    real frames DSH wrote."""

    def __init__(self, root: Path, session: str, compaction: int) -> None:
        self.path = root / "home"
        log = fixture_log(session)
        frames = frames_of(log.path)
        starts = [
            i
            for i, f in enumerate(frames)
            if b'"compaction/start"' in zstandard.ZstdDecompressor().decompress(f, 1 << 26)
        ]
        cut = starts[compaction - 1]
        self.log = copy_session(self.path, log, frames=cut)
        shutil.copytree(FIXTURE_HOMES / session / "profiles", self.path / "profiles")
        self.rest = frames[cut:]

    def grow(self) -> None:
        append_frames(self.log, self.rest)


def create_session(home: Path, log: LogFile) -> Path:
    """A new session as DSH makes one: folder, lock file, then the log renamed into place."""
    target = session_folder(home, log)
    target.mkdir(parents=True)
    shutil.copyfile(log.session_dir / "session.lock", target / "session.lock")
    final = target / log.path.name
    temporary = final.with_name(final.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(log.path.read_bytes())
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(temporary, final)
    return final


def append_frames(path: Path, frames: list[bytes]) -> None:
    """One append batch, as DSH writes it: open for append, write, fsync."""
    with path.open("ab") as handle:
        handle.write(b"".join(frames))
        handle.flush()
        os.fsync(handle.fileno())


@dataclass(frozen=True, slots=True)
class Shown:
    """What a page shows for a session after some of its log: snapshot and gauge."""

    snapshot: SessionSnapshot
    gauge: ContextGauge


def shown_after_each_frame(profiles: Path, log: LogFile, scratch: Path) -> list[Shown]:
    """Fold ``log`` one frame more at a time in a scratch home with ``profiles``.

    Item ``k`` is what a fresh dshweb shows after the first ``k + 1`` frames. The band is
    read without history (``previous=None``), as a server that first sees that state.
    """
    shutil.copytree(profiles, scratch / "profiles")
    path = copy_session(scratch, log, frames=0)
    index = HomeIndex(scratch, profile=PROFILE)
    shown: list[Shown] = []
    for frame in frames_of(log.path):
        append_frames(path, [frame])
        index.refresh()
        snapshot = index.snapshot(next(iter(index.trackers)))
        shown.append(Shown(snapshot, context_gauge(snapshot)))
    return shown


def cut_for_a_visible_change(shown: list[Shown], *, at_least: int) -> int:
    """The first frame count ≥ ``at_least`` whose percent and band both differ from the
    full log's, and from which one append of the rest lands on the full log's band.

    The band keeps some history (hysteresis: a band is left downward only 0.05 below its
    edge), so a page that saw "tight" and then the whole rest at once may stay "tight"
    where a fresh fold of the full log says "moderate"; such a cut would not show the
    full log's band, and is skipped.
    """
    final = shown[-1].gauge
    for count in range(max(1, at_least), len(shown)):
        before = shown[count - 1].gauge
        after_jump = context_band(final.used, final.threshold, before.band)
        if before.percent != final.percent and before.band != final.band == after_jump:
            return count
    raise AssertionError("no cut in this log shows a change of both percent and band")
