"""``manage.py dsh_snapshot``: the command-line contract."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from dshweb.cli.snapshot import snapshots
from dshweb.core.fold.cost import usd_text
from dshweb.core.log.home import encode_segment
from dshweb.core.log.reader import LogTail
from tests.conftest import all_homes, host_caches, run_python, session_log_paths

REQUIRED = {
    "sessionId",
    "cwd",
    "path",
    "formatVersion",
    "live",
    "lastSeq",
    "events",
    "tokenUsage",
    "contextPressure",
    "contextBreakdown",
    "compaction",
    "forecast",
    "summaryForecast",
    "errors",
}


def _snapshot(*args: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command("dsh_snapshot", *args, "--json", stdout=out)
    result: list[dict[str, Any]] = json.loads(out.getvalue())
    return result


def _manage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``manage.py dsh_snapshot ARGS`` in a child process, to see its exit code and streams."""
    return run_python("manage.py", "dsh_snapshot", *args, env=env, timeout=60)


@pytest.fixture
def home() -> Path:
    homes = all_homes()
    if not homes:
        pytest.skip("no DSH home to read")
    return homes[0]


def test_every_session_with_the_contract_fields(home: Path) -> None:
    shots = _snapshot("--home", str(home))
    assert {s["sessionId"] for s in shots} == set(host_caches(home))
    for shot in shots:
        assert set(shot) >= REQUIRED
        assert set(shot["compaction"]) == {
            "contextWindow",
            "reservedTokens",
            "thresholdTokens",
            "retainTokens",
            "measuredTokens",
            "inferred",
            "source",
            "settingsFrom",
            "preview",
        }
        assert set(shot["compaction"]["inferred"]) == {"low", "high", "decisions"}
        assert set(shot["compaction"]["preview"]) == {"automatic", "automaticOutcomes", "manual"}
        assert shot["compaction"]["settingsFrom"] == {"profile": "sdk", "preset": None}
        # The gauge the pages and the API show, by the same rule.
        assert {"band", "usedTokens", "percent", "thresholdTokens", "headroomTokens"} <= set(shot)
        assert (home / shot["path"]).is_file()
        assert shot["events"] == shot["lastSeq"] + 1
        assert shot["compaction"]["contextWindow"] == shot["contextPressure"]["contextWindow"]


def test_the_forecast_is_the_sessions_pace_over_what_is_left() -> None:
    from unittest.mock import patch

    from dshweb.core.fold.forecast import IDLE_AFTER_MS
    from tests.conftest import FIXTURE_HOMES
    from tests.support.snapshots import fixture_snapshot

    home = FIXTURE_HOMES / "pace-steady"
    here = fixture_snapshot("pace-steady")
    soon = here.step_times[-1] + 60_000
    with patch("dshweb.cli.snapshot.time.time", return_value=soon / 1000):
        (shot,) = _snapshot("--home", str(home))
    said = shot["forecast"]
    assert said == here.forecast(soon).as_json()
    assert shot["summaryForecast"] == here.summary_forecast(soon).as_json()
    assert said["pace"] == "session" and said["point"]["source"] == "profile"
    assert said["reason"] is None and said["steps"] > 0 and said["minutes"] > 0
    assert 1 <= said["stepsLow"] <= math.ceil(said["steps"]) <= said["stepsHigh"]
    # Half an hour after its last step: idle, and it says so.
    later = (here.step_times[-1] + IDLE_AFTER_MS) / 1000
    with patch("dshweb.cli.snapshot.time.time", return_value=later):
        (now,) = _snapshot("--home", str(home))
    idle = {
        "steps": None,
        "stepsLow": None,
        "stepsHigh": None,
        "minutes": None,
        "reason": "idle",
        "point": {"low": 12_000, "high": 12_000, "source": "profile"},
        "pace": None,
    }
    assert now["forecast"] == now["summaryForecast"] == idle


def test_at_seq_judges_time_as_of_that_event_on_a_log_days_old() -> None:
    from tests.conftest import FIXTURE_HOMES
    from tests.support.snapshots import fixture_snapshot

    home = FIXTURE_HOMES / "pace-steady"
    whole = fixture_snapshot("pace-steady")
    (now,) = _manage_json("--home", str(home), "--session", "pace-steady")
    assert now["forecast"]["reason"] == "idle"  # its last step was days before today
    # Every step boundary of its second half, replayed: the forecast as of that event.
    cuts = [seq for seq in range(whole.last_seq // 2, whole.last_seq, 17)]
    said = []
    for seq in cuts:
        (shot,) = _snapshot("--home", str(home), "--session", "pace-steady", "--at-seq", str(seq))
        past = fixture_snapshot("pace-steady", seq)
        assert shot["lastSeq"] == seq and past.last_time is not None
        assert shot["forecast"] == past.forecast(past.last_time).as_json()
        said.append(shot["forecast"])
    assert all(f["reason"] is None for f in said), said
    assert all(type(f["steps"]) is int and f["stepsLow"] <= f["steps"] for f in said)


def _manage_json(*args: str) -> list[dict[str, Any]]:
    done = _manage(*args, "--json")
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


def test_session_and_at_seq(home: Path) -> None:
    session_id, rows = next(iter(host_caches(home).items()))
    full = _snapshot("--home", str(home), "--session", session_id)
    assert [s["sessionId"] for s in full] == [session_id]
    (early,) = _snapshot("--home", str(home), "--session", session_id, "--at-seq", "3")
    assert (early["lastSeq"], early["events"]) == (3, 4)
    assert early["tokenUsage"]["outputTokens"] <= full[0]["tokenUsage"]["outputTokens"]
    (at_cache,) = _snapshot(
        "--home", str(home), "--session", session_id, "--at-seq", str(rows["tokenUsage"]["seq"])
    )
    assert at_cache["tokenUsage"] == rows["tokenUsage"]["val"]["totals"]
    assert at_cache["contextBreakdown"] == rows["contextBreakdown"]["val"]["breakdown"]


def test_patch_layer_moves_the_compaction_point(home: Path, tmp_path: Path) -> None:
    patch = tmp_path / "p.yml"
    patch.write_text("- id: compaction-basic\n  config: {thresholdRatio: 0.1, headroomTokens: 0}\n")
    for shot in _snapshot("--home", str(home), "--profile", "none", "--patch", str(patch)):
        window = shot["compaction"]["contextWindow"]
        if window:
            assert shot["compaction"]["thresholdTokens"] == int(window * 0.1)


@pytest.mark.parametrize("setup", ["missing", "file"])
def test_bad_home_exits_non_zero_with_one_line(tmp_path: Path, setup: str) -> None:
    target = tmp_path / "home"
    if setup == "file":
        target.write_text("")
    result = _manage("--home", str(target), "--json")
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(target) in lines[0]


def test_unknown_session_is_an_error(home: Path) -> None:
    result = _manage("--home", str(home), "--session", "nope")
    assert result.returncode == 1
    assert "no session 'nope'" in result.stderr


def test_without_a_home_the_bundled_demo_is_shown(tmp_path: Path) -> None:
    env = {**os.environ, "DSH_HOME": str(tmp_path / "absent"), "DSHWEB_DATA_DIR": str(tmp_path)}
    env.pop("DSHWEB_NO_DEMO", None)
    result = _manage("--json", env=env)
    assert result.returncode == 0, result.stderr
    # Issue 43: it says these are the demo's sessions (at f4ab7dd it said nothing).
    assert result.stderr == (
        f"dshweb: no DSH home at {tmp_path / 'absent'}: showing the bundled demo home "
        "(DSH_HOME names another home; DSHWEB_NO_DEMO=1 turns the demo off)\n"
    )
    shots = json.loads(result.stdout)
    assert sorted(s["sessionId"] for s in shots) == [
        "billing-review",
        "csv-importer",
        "flaky-checkout",
        "sales-report",
    ]
    assert {s["compaction"]["thresholdTokens"] for s in shots} == {12_000}
    # Every demo session has a cost: DSH's own deepseek-flash is priced as the registry's
    # deepseek-v4-flash by default, and says so; --price-as none leaves it unpriced.
    costs = {s["sessionId"]: s["cost"]["totalUsd"] for s in shots}
    assert costs["flaky-checkout"] > 0 and costs["csv-importer"] > 0
    (flash,) = next(s for s in shots if s["sessionId"] == "csv-importer")["cost"]["byModel"]
    assert (flash["model"], flash["alias"]) == ("deepseek-flash", "deepseek-v4-flash"), flash
    unpriced = json.loads(_manage("--json", "--price-as", "none", env=env).stdout)
    assert {s["sessionId"]: s["cost"]["totalUsd"] for s in unpriced}["csv-importer"] is None
    env["DSHWEB_NO_DEMO"] = "1"
    result = _manage("--json", env=env)
    assert result.returncode == 1
    assert "absent does not exist" in result.stderr


def test_session_reads_only_its_own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    homes = [h for h in all_homes() if len(host_caches(h)) == 1][:3]
    if len(homes) < 2:
        pytest.skip("needs two one-session homes")
    for home in homes:  # one home holding every session
        shutil.copytree(home / "sessions", tmp_path / "sessions", dirs_exist_ok=True)
    wanted = next(iter(host_caches(homes[0])))
    opened: list[Path] = []
    real_read = LogTail.read

    def read(tail: LogTail, *args: Any, **named: Any) -> Any:
        opened.append(tail.path)
        return real_read(tail, *args, **named)

    monkeypatch.setattr(LogTail, "read", read)
    (shot,) = snapshots(home=tmp_path, profile="sdk", session=wanted)
    assert shot.session_id == wanted
    assert [p.parent.name for p in opened] == [encode_segment(wanted)]
    opened.clear()
    assert len(snapshots(home=tmp_path, profile="sdk")) == len(homes)
    assert len(opened) == len(homes)


def test_the_command_starts_without_django(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['manage.py', 'dsh_snapshot', '--json', '--home', sys.argv[1]]"
        "\ntry:\n    runpy.run_path('manage.py', run_name='__main__')\nexcept SystemExit:\n    pass"
        "\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'daphne')))"
    )
    result = run_python("-c", probe, str(tmp_path), timeout=60, check=True)
    assert result.stdout.splitlines() == ["[]", "[]"]


def test_progress_on_the_terminal_counts_every_session_and_byte(home: Path) -> None:
    result = _manage("--home", str(home), "--progress")
    assert result.returncode == 0, result.stderr
    logs = session_log_paths(home)
    megabytes = sum(p.stat().st_size for p in logs) / 1e6
    last = result.stderr.rsplit("\r", 1)[-1].strip()
    assert last.startswith(f"read {len(logs):,} of {len(logs):,} sessions, ")
    assert f"{megabytes:,.1f} of {megabytes:,.1f} MB" in last
    assert "\r" not in _manage("--home", str(home)).stderr  # not a terminal: quiet


def test_the_text_gives_each_sessions_gauge_band_point_and_cost(tmp_path: Path) -> None:
    """Issue 43: one line per session with what the ring shows (at f4ab7dd: the tokens and
    the events only), each field from the same figures as ``--json``."""
    from tests.conftest import FIXTURE_HOMES

    home = str(FIXTURE_HOMES / "cost-switch")
    (shot,) = json.loads(_manage("--json", "--home", home).stdout)
    done = _manage("--home", home)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (line,) = done.stdout.splitlines()
    total = shot["cost"]["totalUsd"]
    assert line.split("\t") == [
        "cost-switch",
        "idle",
        f"{shot['usedTokens']}/{shot['windowTokens']}",
        f"{shot['percent']}% of window",
        shot["band"],
        f"point {shot['thresholdTokens']}",
        usd_text(total),
        f"{shot['events']} events",
    ]
    assert shot["band"] == "tight" and total > 0
    (part,) = json.loads(_manage("--json", "--home", home, "--price-as", "none").stdout)
    assert part["cost"]["unpriced"] and 0 < part["cost"]["totalUsd"] < total
    unpriced = _manage("--home", home, "--price-as", "none").stdout.split("\t")
    assert unpriced[6] == usd_text(part["cost"]["totalUsd"]) + " + unpriced"
