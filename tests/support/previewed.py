"""Walk a real log event by event and judge the automatic fold preview the dashboard
showed just before each pass of the engine's check (a pre-step that pruned or
compacted) against what the engine then did (``tests/core/fold/test_preview_known.py``,
``bench/preview_backtest.py``).

The preview is taken as the dashboard takes it (:func:`take_snapshot`, with the settings
the home's profile gives the session), from the log as it stood before the pass's first
event: sessions run under a ``dsh --patch`` the log does not record are judged on what
dshweb can know, not on the manifest's truth.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.preview import AutomaticPreview, CompactionPreview
from dshweb.core.fold.session import SessionTracker, take_snapshot
from dshweb.core.log.wire import (
    CompactionPrune,
    CompactionStart,
    CompactionSummary,
    StepEnd,
    StepStart,
    TurnEnd,
    TurnStart,
)
from tests.support.inferred import events_of

BETWEEN = (StepEnd, TurnStart, TurnEnd)


@dataclass(frozen=True, slots=True)
class Done:
    """What one pass of the engine did."""

    seq: int
    pruned: frozenset[int]
    summary: tuple[int, int, int] | None
    """The first compaction's ``shadowedRange`` and ``shadowedTokenCount``."""
    failed: bool = False
    """A compaction started and wrote no summary (it failed): what it shadowed is not
    in the log."""


@dataclass(frozen=True, slots=True)
class Judged:
    done: Done
    said: AutomaticPreview
    compaction: int
    """The pass's number in its session (1-based)."""

    @property
    def verdict(self) -> str:
        """``exact`` (one outcome, the engine's), ``held`` (the engine's among several),
        ``unknown`` (it said what it did not know), ``failed`` (the engine's compaction
        failed: its range is not in the log), or ``wrong``."""
        if self.done.failed:
            return "failed"
        if self.said.unknown is not None:
            return "unknown"
        matches = [o for o in self.said.outcomes if _same(o, self.done)]
        if not matches:
            return "wrong"
        return "exact" if len(self.said.outcomes) == 1 else "held"


def _same(outcome: CompactionPreview, done: Done) -> bool:
    if frozenset(c.seq for c in outcome.cuts) != done.pruned:
        return False
    if done.summary is None:
        return not outcome.compacts
    if not outcome.compacts or outcome.first is None or outcome.last is None:
        return False
    return (outcome.first.seq, outcome.last.seq, outcome.shadowed_tokens) == done.summary


@dataclass
class Session:
    name: str
    shape: str
    judged: list[Judged] = field(default_factory=list)


def shape_of(home: Path) -> str:
    manifest = json.loads((home.parent / "MANIFEST.json").read_text("utf-8"))
    hidden = manifest.get(home.name, {}).get("hidden")
    if hidden:
        visible = set(hidden.get("visible", ()))
        where = "profile" if {"engine", "pruner"} <= visible else "unrecorded"
        return f"{where}: {hidden.get('shape', home.name)}"
    return "profile"


def judge_home(home: Path) -> Iterator[Session]:
    """Every session of ``home`` with its passes judged."""
    index = HomeIndex(home)
    index.refresh()
    shape = shape_of(home)
    for whole in index.trackers.values():
        settings = index.settings_of(whole)[1]
        tracker = SessionTracker(whole.log, settings_of=index._settings)
        session = Session(whole.session_id, shape)
        events = events_of(whole.log)
        in_step = False
        open_pass: tuple[int, AutomaticPreview] | None = None
        pruned: set[int] = set()
        summary: tuple[int, int, int] | None = None
        started: str | None = None

        for event in events:
            kind = type(event)
            data = getattr(event, "data", None)
            begins = (
                not in_step
                and open_pass is None
                and (
                    kind is CompactionPrune
                    or (kind is CompactionStart and data is not None and data.turn is not None)
                )
            )
            if begins:
                shot = take_snapshot(
                    tracker, home=home, live=False, engine=settings.engine, pruner=settings.pruner
                )
                open_pass = (event.seq or 0, shot.automatic)
            if kind is CompactionPrune and open_pass is not None and data is not None:
                pruned.update(data.shadowed_seqs or ())
            elif kind is CompactionStart and open_pass is not None and data is not None:
                started = started or data.compaction_id
            elif (
                kind is CompactionSummary
                and data is not None
                and summary is None
                and open_pass is not None
                and data.compaction_id == started
                and (shadowed := data.shadowed_range) is not None
            ):
                summary = (shadowed.start, shadowed.end, data.shadowed_token_count or 0)
            if kind is StepStart or kind in BETWEEN:
                if open_pass is not None:
                    failed = started is not None and summary is None
                    done = Done(open_pass[0], frozenset(pruned), summary, failed)
                    session.judged.append(Judged(done, open_pass[1], len(session.judged) + 1))
                open_pass, summary, started = None, None, None
                pruned = set()
                in_step = kind is StepStart
            tracker._fold(event)
        yield session
