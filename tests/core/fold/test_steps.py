"""The step export (dshweb.core.fold.steps): one row per step of a real log, each row's
figures against the host's own projection cache wherever the host flushed it at that
step's end, and the band held with the plugin's hysteresis from row to row."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.fold import index as index_module
from dshweb.core.fold.gauge import context_band
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.fold.session import SessionSnapshot, SessionTracker
from dshweb.core.fold.steps import STEP_COLUMNS, StepRow, fold_steps
from dshweb.core.log.home import LogFile, session_logs
from dshweb.core.log.wire import AnyEvent
from dshweb.core.profile.effective import (
    DEFAULT_RULE,
    EffectiveSettings,
    EngineConfig,
    SettingsTable,
    settings_table,
)
from dshweb.core.profile.layers import engine_config
from tests.conftest import all_homes
from tests.support.inferred import events_of

HOMES = [home for home in all_homes() if (home / "checkpoints.json").exists()]


@cache
def rows_of(home: Path) -> dict[str, list[dict[str, Any]]]:
    engine = EngineConfig.from_config(engine_config(home, "sdk"))
    sdk = SettingsTable("sdk", EffectiveSettings(engine, DEFAULT_RULE, None))  # no preset
    found: dict[str, list[dict[str, Any]]] = {}
    for log in session_logs(home):
        rows: list[StepRow] = []
        assert fold_steps(log, table=sdk, on_row=rows.append) is None
        found[log.session_dir.name] = [dict(zip(STEP_COLUMNS, r, strict=True)) for r in rows]
    return found


def host_points(home: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The host's own public values by (session, seq): ``dsh web``'s
    ``session/projections`` answer for the log cut there (``replayed`` checkpoints)."""
    data = json.loads((home / "checkpoints.json").read_text("utf-8"))
    return {(p["sessionId"], p["seq"]): p["values"] for p in data["replayed"]}


CUTS_PER_SESSION = 10
"""Rows per session, evenly spread, checked against a new fold of the home cut at the row
(``HomeIndex(home, stop_after_seq=seq)``, the snapshot command's ``--at-seq``: each reads
the whole log again). Every row is checked against a fold of the log event by event,
against the dashboard's fold of the home as it went through the row, and against the host
wherever it spoke."""


class _Dashboard(SessionTracker):
    """A session's tracker in its home's index that takes the index's snapshot as soon as
    the fold has gone through each of ``seqs`` (before the first event past it; those past
    the log's end, at its end): one fold of the home shows every row, as folding the home
    again through each seq would (tests/core/fold/test_parity.py's ``_Comparer``)."""

    def __init__(self, log: LogFile, seqs: Iterable[int], index: HomeIndex) -> None:
        super().__init__(log)
        self.index = index
        self.pending = sorted(seqs, reverse=True)
        self.shots: dict[int, SessionSnapshot] = {}

    def _fold(self, event: AnyEvent) -> None:
        while event.seq is not None and self.pending and self.pending[-1] < event.seq:
            self._take(self.pending.pop())
        super()._fold(event)

    def finish(self) -> None:
        while self.pending:
            self._take(self.pending.pop())

    def _take(self, seq: int) -> None:
        self.shots[seq] = self.index.snapshot(self.log.session_dir)


@cache
def _settings_once(home: Path, profile: str, extra_patches: Sequence[Path] = ()) -> SettingsTable:
    """The home's settings table, read once: its profile files do not change while the
    test folds the home again (reading them costs more than folding a home)."""
    return settings_table(home, profile, tuple(extra_patches))


def _dashboard(home: Path) -> dict[str, _Dashboard]:
    """The home folded once as the dashboard folds it, each session's rows shown."""
    index = HomeIndex(home)
    found: dict[str, _Dashboard] = {}
    for log in session_logs(home):
        seqs = [row["seq"] for row in rows_of(home)[log.session_dir.name]]
        found[log.session_dir.name] = _Dashboard(log, seqs, index)
        index.adopt(log.session_dir, found[log.session_dir.name])
    index.refresh()
    for tracker in found.values():
        tracker.finish()
    return found


@pytest.mark.parametrize("home", HOMES, ids=[h.name for h in HOMES])
def test_every_step_agrees_with_the_fold_and_with_the_host_where_it_spoke(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "settings_table", _settings_once)
    host = host_points(home)
    logs = {log.session_dir.name: log for log in session_logs(home)}
    dashboard = _dashboard(home)
    for session_id, rows in rows_of(home).items():
        assert rows, session_id
        # dshweb's own fold of the log, event by event: every row against the meter as it
        # stood right after the row's event (its parity with the host at every flushed
        # point is tests/core/fold/test_parity.py's) ...
        by_seq = {row["seq"]: row for row in rows}
        meter, compared = SessionMeter(), 0
        for event in events_of(logs[session_id]):
            meter.fold(event)
            row = by_seq.get(event.seq) if event.seq is not None else None
            if row is not None:
                _assert_row(row, meter.token_usage_view(), meter.context_pressure_view(), "fold")
                compared += 1
        assert compared == len(rows), session_id
        stride = max(1, len(rows) // CUTS_PER_SESSION)
        for number, row in enumerate(rows):
            # ... the dashboard's, as its fold of the home went through the row ...
            shot = dashboard[session_id].shots[row["seq"]]
            _assert_row(row, shot.token_usage, shot.context_pressure, "dashboard")
            if number % stride == 0:
                # ... and a home folded anew up to the row's seq.
                index = HomeIndex(home, stop_after_seq=row["seq"])
                index.refresh()
                shot = index.snapshot(logs[session_id].session_dir)
                _assert_row(row, shot.token_usage, shot.context_pressure, "home folded to it")
            # The host's own figures at this step's end, or at the turn's end right after
            # it (the host answered for logs cut at turn ends; a turn/end changes none).
            values = host.get((session_id, row["seq"])) or host.get((session_id, row["seq"] + 1))
            if values is not None:
                totals, view = values["tokenUsage"], values["contextPressure"]
                host_row = {
                    "cache_write": totals["cacheWriteTokens"],
                    "output": totals["outputTokens"],
                    "pressure": view.get("pressureTokens"),
                    "projected": view.get("projectedTokens"),
                    "window": view.get("contextWindow"),
                }
                _assert_fields(row, host_row, "host")


def _assert_row(
    row: dict[str, Any], usage: dict[str, int], pressure: dict[str, int], against: str
) -> None:
    """The row's figures against ``against``'s projections at the row's seq."""
    theirs = {
        "pressure": pressure.get("pressureTokens"),
        "projected": pressure.get("projectedTokens"),
        "window": pressure.get("contextWindow"),
        "uncached_input": usage["uncachedInputTokens"],
        "output": usage["outputTokens"],
        "cache_read": usage["cacheReadTokens"],
    }
    _assert_fields(row, theirs, against)


def _assert_fields(row: dict[str, Any], theirs: dict[str, Any], against: str) -> None:
    """Each of ``theirs`` equal to the row's field of that name; a failure names the row's
    seq, each field that differs and both values."""
    unlike = [f"{k}: row {row[k]}, {against} {v}" for k, v in theirs.items() if row[k] != v]
    assert not unlike, f"step row at seq {row['seq']}: " + "; ".join(unlike)


def test_the_host_spoke_at_step_ends() -> None:
    compared = 0
    for home in HOMES:
        host = host_points(home)
        for session_id, rows in rows_of(home).items():
            compared += sum(
                (session_id, row["seq"]) in host or (session_id, row["seq"] + 1) in host
                for row in rows
            )
    assert compared >= 20


def test_rows_count_the_steps_and_carry_the_point_and_the_band() -> None:
    home = next(h for h in HOMES if h.name == "pace-steady")
    (rows,) = rows_of(home).values()
    assert [row["step"] for row in rows] == list(range(1, len(rows) + 1))
    assert {row["window"] for row in rows} == {24_000}
    assert {row["threshold"] for row in rows} == {12_000}
    band = None
    for row in rows:
        used = row["projected"] if row["projected"] is not None else row["pressure"]
        band = context_band(used, 12_000, band)
        assert row["band"] == band.value
        assert row["percent"] == round(used / 240) or abs(row["percent"] - used / 240) <= 0.5
    assert {"tight", "moderate"} <= {row["band"] for row in rows}
    assert rows[0]["time"].endswith("Z") and rows[0]["time_ms"] > 0
