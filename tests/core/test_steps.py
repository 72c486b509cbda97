"""The step export (dshweb.core.fold.steps): one row per step of a real log, each row's
figures against the host's own projection cache wherever the host flushed it at that
step's end, and the band held with the plugin's hysteresis from row to row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.fold.gauge import context_band
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.fold.steps import STEP_COLUMNS, StepRow, fold_steps
from dshweb.core.log.home import session_logs
from dshweb.core.profile.effective import (
    DEFAULT_RULE,
    EffectiveSettings,
    EngineConfig,
    SettingsTable,
)
from dshweb.core.profile.layers import engine_config
from tests.conftest import all_homes
from tests.inferred import events_of

HOMES = [home for home in all_homes() if (home / "checkpoints.json").exists()]


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


FOLDS_UP_TO_A_ROW = 40
"""Rows per session, evenly spread, checked against a whole new fold of the home cut at the
row (each costs a fold of the log so far); every row is checked against a fold of the log
event by event, and against the host wherever it spoke."""


@pytest.mark.parametrize("home", HOMES, ids=[h.name for h in HOMES])
def test_every_step_agrees_with_the_fold_and_with_the_host_where_it_spoke(home: Path) -> None:
    host = host_points(home)
    logs = {log.session_dir.name: log for log in session_logs(home)}
    for session_id, rows in rows_of(home).items():
        assert rows, session_id
        # dshweb's own fold of the log, event by event: every row against the meter as it
        # stood right after the row's event (its parity with the host at every flushed
        # point is tests/core/test_parity.py's) ...
        by_seq = {row["seq"]: row for row in rows}
        meter, compared = SessionMeter(), 0
        for event in events_of(logs[session_id]):
            meter.fold(event)
            row = by_seq.get(event.seq) if event.seq is not None else None
            if row is not None:
                _assert_row(row, meter.token_usage_view(), meter.context_pressure_view())
                compared += 1
        assert compared == len(rows), session_id
        stride = max(1, len(rows) // FOLDS_UP_TO_A_ROW)
        for number, row in enumerate(rows):
            if number % stride == 0:
                # ... and the dashboard's: a home folded anew up to the row's seq.
                index = HomeIndex(home, stop_after_seq=row["seq"])
                index.refresh()
                shot = index.snapshot(next(f for f in index.trackers if f.name == session_id))
                _assert_row(row, shot.token_usage, shot.context_pressure)
            # The host's own figures at this step's end, or at the turn's end right after
            # it (the host answered for logs cut at turn ends; a turn/end changes none).
            values = host.get((session_id, row["seq"])) or host.get((session_id, row["seq"] + 1))
            if values is not None:
                totals, view = values["tokenUsage"], values["contextPressure"]
                assert (row["cache_write"], row["output"]) == (
                    totals["cacheWriteTokens"],
                    totals["outputTokens"],
                )
                assert row["pressure"] == view.get("pressureTokens")
                assert row["projected"] == view.get("projectedTokens")
                assert row["window"] == view.get("contextWindow")


def _assert_row(row: dict[str, Any], usage: dict[str, int], pressure: dict[str, int]) -> None:
    assert row["pressure"] == pressure.get("pressureTokens")
    assert row["projected"] == pressure.get("projectedTokens")
    assert row["window"] == pressure.get("contextWindow")
    assert (row["uncached_input"], row["output"], row["cache_read"]) == (
        usage["uncachedInputTokens"],
        usage["outputTokens"],
        usage["cacheReadTokens"],
    )


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
