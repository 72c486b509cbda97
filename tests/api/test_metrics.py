"""``/metrics``: its bearer token, its series against the fixture sessions' own figures
(per-session series only for live and recently active sessions) and the real ``promtool
check metrics`` on its output; a real Prometheus scraping a running dshweb is
``tests/api/test_monitoring.py``'s."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dshweb.accounts.tokens import token_create
from dshweb.api import metrics
from dshweb.api.metrics import RECENT_MS
from dshweb.api.tallies import Tallies
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.cost_settings import DEFAULT_PRICE_AS, parse_aliases
from dshweb.core.fold.forecast import IDLE_AFTER_MS
from dshweb.core.fold.meter import BUCKET_KEYS, BUCKET_NAMES
from dshweb.core.log.home import session_logs
from dshweb.live import startup
from tests.conftest import FIXTURE_HOMES
from tests.support.homes import home_of_fixtures
from tests.support.snapshots import fixture_snapshot

pytestmark = [pytest.mark.django_db]

SESSIONS = ("auto-compact", "pace-steady", "fold-failures", "cost-switch")
LIVE = "pace-steady"
TOKEN = "scrape-token-for-tests-only"


def make_home(target: Path) -> Path:
    return home_of_fixtures(target, SESSIONS)


def live_lock(home: Path) -> Any:
    """Hold ``LIVE``'s session lock as a running DSH would (the lock file is its own)."""
    (log,) = (log for log in session_logs(home) if log.session_dir.name == LIVE)
    handle = (log.session_dir / "session.lock").open("a")
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return handle


@pytest.fixture
def home(
    tmp_path: Path, settings: Any, fresh_hub: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """The home, as the only one this process ever scraped (an earlier test's home
    "local" would be in the counters, which never go down) and with no server running
    (an earlier test's in-process server leaves its loop set)."""
    monkeypatch.setattr(metrics.sessions, "_tallies", Tallies())
    monkeypatch.setattr(startup, "_loop", None)
    target = make_home(tmp_path / "home")
    with live_lock(target):
        settings.DSHWEB = {
            **settings.DSHWEB,
            "DSH_HOME": target,
            "PROFILE": "sdk",
            "METRICS_TOKEN": TOKEN,
        }
        yield target


def scrape(token: str | None = TOKEN) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = Client().get("/metrics", headers=headers)
    return answer.status_code, answer.content.decode()


def scrape_at(now_ms: int) -> str:
    """A scrape as if it were ``now_ms`` (epoch ms)."""
    with patch("dshweb.api.metrics.time") as clock:
        clock.time.return_value = now_ms / 1000
        status, text = scrape()
    assert status == 200
    return text


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_scrape_needs_the_bearer_token(home: Path) -> None:
    status, _ = scrape(None)
    assert status == 401
    answer = Client().get("/metrics")
    assert answer["WWW-Authenticate"] == 'Bearer realm="dshweb metrics"'
    assert scrape("wrong")[0] == 401
    user = get_user_model().objects.create_user("ops", password="pw-for-tests-only")
    signed_in = Client()
    signed_in.force_login(user)
    assert signed_in.get("/metrics").status_code == 401  # a browser's session is no scrape
    _, personal = token_create(user=user, name="prometheus")
    assert scrape(personal)[0] == 200
    assert scrape()[0] == 200


def test_the_series_are_the_sessions_figures(home: Path) -> None:
    status, text = scrape()
    assert status == 200
    got = samples(text)
    live = fixture_snapshot(LIVE)
    labels = (("home", "local"), ("project", live.cwd or ""), ("session", LIVE))
    assert got["dshweb_session_used_tokens", labels] == live.used_tokens
    assert got["dshweb_session_window_tokens", labels] == 24_000
    assert got["dshweb_session_threshold_tokens", labels] == 12_000
    assert live.used_tokens is not None
    assert got["dshweb_session_headroom_tokens", labels] == 12_000 - live.used_tokens
    assert got["dshweb_session_used_ratio", labels] == live.used_tokens / 24_000
    assert live.last_time is not None
    assert got["dshweb_session_last_event_timestamp_seconds", labels] == live.last_time / 1000
    assert got["dshweb_session_live", labels] == 1
    # Only the live session and those active in the last hour have per-session series
    # (auto-compact ended days ago; a fixture recorded within the hour still counts).
    per_session = {dict(key[1])["session"] for key in got if key[0].startswith("dshweb_session_")}
    recent = time.time() * 1000 - RECENT_MS
    shown = {LIVE} | {n for n in SESSIONS if (fixture_snapshot(n).last_time or 0) >= recent}
    assert per_session == shown and "auto-compact" not in per_session
    shots = [fixture_snapshot(name) for name in SESSIONS]
    for kind in ("automatic", "manual", "overflow", "prune"):
        expected = sum(
            1 for s in shots for f in s.ledger.compactions if f.kind == kind and f.status == "done"
        )
        assert got["dshweb_folds_total", (("home", "local"), ("kind", kind))] == expected
    freed = sum(
        max(0, f.dropped or 0) for s in shots for f in s.ledger.compactions if f.status == "done"
    )
    assert got["dshweb_freed_tokens_total", (("home", "local"),)] == freed > 0
    failed = sum(1 for s in shots for f in s.ledger.compactions if f.status == "failed")
    assert got["dshweb_fold_failures_total", (("home", "local"),)] == failed == 1
    # The requests' tokens by kind are DSH's own tokenUsage, split by model; the
    # summariser's are each summary's own usage.
    tokens = {
        (dict(labels)["model"], dict(labels)["kind"]): value
        for (name, labels), value in got.items()
        if name == "dshweb_tokens_total"
    }
    assert {model for model, _ in tokens} == {"deepseek-v4-pro", "deepseek-flash"}
    for kind, bucket in zip(BUCKET_KEYS, BUCKET_NAMES, strict=True):
        usage = sum(s.token_usage.get(bucket, 0) for s in shots)
        assert sum(v for (_, k), v in tokens.items() if k == kind) == usage
    assert tokens["deepseek-v4-pro", "cache_read"] > 0 and tokens["deepseek-flash", "output"] > 0
    summaries = sum(
        sum(f.summary_usage.counts) for s in shots for f in s.ledger.compactions if f.summary_usage
    )
    summarised = sum(v for (n, _), v in got.items() if n == "dshweb_summariser_tokens_total")
    assert summarised == summaries > 0
    assert got["dshweb_sessions", (("home", "local"),)] == len(SESSIONS)
    # What the requests and summaries cost, by model: only the models with a price (DSH's
    # own deepseek-flash priced as the registry's deepseek-v4-flash, the server's default).
    book = RateBook(aliases=parse_aliases(DEFAULT_PRICE_AS))
    costs = [
        (row.rates.route[0], row.cost + (row.summary_cost or 0.0))
        for s in shots
        for row in book.by_route(s.cost)
        if row.cost is not None
    ]
    assert {model for model, _ in costs} == {"deepseek-v4-pro", "deepseek-flash"}
    cost = got["dshweb_cost_usd_total", (("home", "local"), ("model", "deepseek-v4-pro"))]
    assert (
        cost == pytest.approx(sum(usd for m, usd in costs if m == "deepseek-v4-pro")) and cost > 0
    )
    flash = got["dshweb_cost_usd_total", (("home", "local"), ("model", "deepseek-flash"))]
    assert (
        flash == pytest.approx(sum(usd for m, usd in costs if m == "deepseek-flash")) and flash > 0
    )
    assert got["dshweb_reader_errors", (("home", "local"),)] == 0
    assert got["dshweb_alerts_sent_total", (("channel", "webhook"),)] == 0
    assert any(name.startswith("process_") for name, _ in got)


def test_the_two_forecasts_are_each_their_own_series(
    tmp_path: Path, settings: Any, fresh_hub: None
) -> None:
    """prune-heavy prunes before it summarises: the next pass of the engine's check (a
    prune) and the next summary are steps apart, and each series says its own."""
    target = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "prune-heavy", target)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": target, "PROFILE": "sdk"}
    settings.DSHWEB["METRICS_TOKEN"] = TOKEN
    shot = fixture_snapshot("prune-heavy")
    assert shot.last_time is not None
    now = shot.last_time + 1_000  # a moment after its last event: at work, not idle
    forecast, summary = shot.forecast(now).steps, shot.summary_forecast(now).steps
    assert forecast is not None and summary is not None and summary > forecast

    got = samples(scrape_at(now))
    labels = (("home", "local"), ("project", shot.cwd or ""), ("session", shot.session_id))
    assert got["dshweb_session_forecast_steps", labels] == forecast
    assert got["dshweb_session_summariser_forecast_steps", labels] == summary
    # Idle, still within the hour: its figures, but neither forecast (as the pages).
    later = shot.last_time + IDLE_AFTER_MS
    assert shot.summary_forecast(later).steps is None and later < shot.last_time + RECENT_MS
    idle = samples(scrape_at(later))
    assert ("dshweb_session_used_tokens", labels) in idle
    assert not any(name.endswith("forecast_steps") for name, _ in idle)


@pytest.mark.prometheus
def test_promtool_accepts_the_output(home: Path) -> None:
    """At work (a moment after the live session's last event): every series of a
    session has a sample for promtool to read, the forecasts too."""
    last = fixture_snapshot(LIVE).last_time
    assert last is not None
    text = scrape_at(last + 1_000)
    empty = [f.name for f in text_string_to_metric_families(text) if not f.samples]
    assert empty == ["dshweb_alert_watcher_last_round_age_seconds", "dshweb_event_loop_tasks"]
    checked = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
