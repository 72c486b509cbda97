"""The live export against real parts: dshweb's hub over a fixture home, a session of it
live (its lock held, as DSH holds it) and growing by the real frames DSH wrote, the
OpenTelemetry SDK's OTLP/HTTP exporters posting to a receiver on 127.0.0.1 that decodes
with ``opentelemetry-proto``; each figure received is the API's. Then a collector that
hangs and goes away: the hub folds on, the drops are counted, and once a collector
answers again the session's newest figures reach it."""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.config import get_config
from dshweb.environment_otlp import OtlpTarget
from dshweb.live.service import current_hub
from dshweb.otlp import live as otlp_live
from dshweb.otlp import names
from dshweb.otlp.backfill import backfill
from dshweb.otlp.figures import settled, span_id, trace_id
from dshweb.otlp.live import ExportJob, LiveExport
from dshweb.otlp.send import COUNTS, Sender
from tests.support.homes import CutHome, copy_session, fixture_log
from tests.support.otlp_receiver import HOST, Point, Received, Span, receiving

pytestmark = [pytest.mark.django_db]

SESSION = "cost-switch"
"""Two models, summaries and prune passes: its log is cut before its 4th summary."""
IDLE = ("auto-compact", "fold-failures")
"""Sessions that ended long ago: the live export leaves them to the backfill."""
TOKEN = "scrape-token-for-otlp-tests"


def target(base: str, interval: float = 60.0) -> OtlpTarget:
    return OtlpTarget(f"{base}/v1/metrics", f"{base}/v1/traces", interval, live=True)


@pytest.fixture
def cut(tmp_path: Path, settings: Any, fresh_hub: None) -> Iterator[CutHome]:
    home = CutHome(tmp_path, SESSION, 4)
    for name in IDLE:
        copy_session(home.path, fixture_log(name))
    settings.DSHWEB = {
        **settings.DSHWEB,
        "DSH_HOME": home.path,
        "PROFILE": "sdk",
        "FOLD_CHECKPOINTS": False,
        "METRICS_TOKEN": TOKEN,
    }
    with (home.log.parent / "session.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # live, as DSH holds it
        yield home


def api(path: str) -> Any:
    user = get_user_model().objects.get_or_create(username="otlp-reader")[0]
    client = Client()
    client.force_login(user)
    answer = client.get(f"/api/v1/homes/local/sessions/{path}")
    assert answer.status_code == 200, answer.content
    return json.loads(answer.content)


def newest(points: list[Point], session: str) -> dict[tuple[str, Any], Point]:
    """The newest point of each series of ``session``."""
    found: dict[tuple[str, Any], Point] = {}
    for point in points:
        if point.attrs[names.CONVERSATION] == session:
            key = (point.metric, point.attributes)
            if key not in found or point.time >= found[key].time:
                found[key] = point
    return found


def by(points: dict[tuple[str, Any], Point], metric: str, **attrs: Any) -> dict[Any, Any]:
    """Values of ``metric``, keyed by the attribute values named (``attr=None``)."""
    wanted = list(attrs)
    return {
        tuple(p.attrs[a] for a in wanted): p.value for (m, _), p in points.items() if m == metric
    }


def folded_through(received: Received, requests: int) -> bool:
    points, _ = received.snapshot()
    usage = newest(points, SESSION)
    counts = by(usage, names.TOKEN_USAGE, **{names.MODEL: 1, names.TOKEN_TYPE: 1})
    return bool(sum(v[0] for (_, kind), v in counts.items() if kind == "input") == requests)


def test_the_live_export_sends_the_apis_figures(cut: CutHome) -> None:
    started_ns = time.time_ns()
    with receiving() as (base, received):
        hub = current_hub()
        hub.wait_ready(60)
        seen = hub.view().session(SESSION)
        assert seen is not None
        export = LiveExport(hub, "local", target(base)).start()
        try:
            received.wait_for(lambda r: r.requests["metrics"] >= 1, why="the first export")
            first, spans_before = received.snapshot()
            cut.grow()  # the rest of the log, as DSH appends it
            detail = _wait_for_the_end(received)
        finally:
            export.stop()
        points, spans = received.snapshot()
    ledger = api(f"{SESSION}/ledger")

    # Only the live session is exported live; the idle ones are the backfill's.
    assert {p.attrs[names.CONVERSATION] for p in points} == {SESSION}
    assert all(started_ns <= p.time <= time.time_ns() for p in points)  # stamped now
    # Before the append, the compactions of its past are no new spans.
    assert spans_before == []
    usage = newest(points, SESSION)
    _assert_tokens_and_cost(usage, detail)
    _assert_context_and_compactions(usage, detail, ledger)
    # Its compactions settled before the export began are its past (the backfill's).
    past = {seen.ledger.first + i for i in settled(seen.ledger.compactions)}
    _assert_spans(spans, ledger, past)
    assert {p.resource for p in first} == {p.resource for p in points}
    resource = dict(points[0].resource)
    assert (resource["service.name"], resource["service.instance.id"]) == ("dshweb", "local")
    # The backfill of the same home sends these very spans (ids, times, attributes) again,
    # and the same series: what the live export sent lands where the history does.
    with receiving() as (base, received):
        sender = Sender(target(base))
        book = get_config().rate_book  # the server's rates (DSHWEB_PRICE_AS), as the live's
        backfill(cut.path, name="local", profile="sdk", sender=sender, book=book)
        sender.close()
        history, history_spans = received.snapshot()
    assert set(spans) <= set(history_spans)
    assert {p.series for p in usage.values()} <= {p.series for p in history}


def _wait_for_the_end(received: Received) -> Any:
    detail = api(SESSION)
    deadline = time.monotonic() + 60
    requests = sum(row["requests"] for row in detail["cost"]["byModel"])
    while not folded_through(received, requests) or detail["lastSeq"] < _last_seq():
        assert time.monotonic() < deadline, "the appended frames never reached the receiver"
        time.sleep(0.1)
        detail = api(SESSION)
        requests = sum(row["requests"] for row in detail["cost"]["byModel"])
    return detail


def _last_seq() -> int:
    from dshweb.core.fold.index import HomeIndex
    from tests.conftest import FIXTURE_HOMES

    index = HomeIndex(FIXTURE_HOMES / SESSION)
    index.refresh()
    return index.snapshot(next(iter(index.trackers))).last_seq


def _assert_tokens_and_cost(usage: dict[tuple[str, Any], Point], detail: Any) -> None:
    rows = {row["model"]: row for row in detail["cost"]["byModel"]}
    histograms = by(usage, names.TOKEN_USAGE, **{names.MODEL: 1, names.TOKEN_TYPE: 1})
    for model, row in rows.items():
        tokens = row["tokens"]
        inputs = tokens["uncachedInputTokens"] + tokens["cacheReadTokens"]
        inputs += tokens["cacheWriteTokens"]  # the conventions' input: cached tokens included
        count, total, buckets, bounds = histograms[model, "input"]
        assert (count, total, sum(buckets)) == (row["requests"], inputs, row["requests"])
        assert bounds[:3] == (1.0, 4.0, 16.0) and len(buckets) == len(bounds) + 1
        count, total, _, _ = histograms[model, "output"]
        assert (count, total) == (row["requests"], tokens["outputTokens"])
        route = {names.MODEL: 1}
        assert by(usage, names.CACHE_READ, **route)[model,] == tokens["cacheReadTokens"]
        assert by(usage, names.CACHE_CREATION, **route)[model,] == tokens["cacheWriteTokens"]
        cost = row["usd"] + (row["summaryUsd"] or 0)
        assert by(usage, names.COST, **route)[model,] == pytest.approx(cost, rel=1e-12)
    assert len(rows) == 2  # the session switched model: one series of each per model
    assert {p.attrs[names.PROVIDER] for p in usage.values() if names.PROVIDER in p.attrs} == {
        "deepseek"
    }
    total = detail["tokenUsage"]
    counted = sum(v[1] for (_, kind), v in histograms.items() if kind == "input")
    assert counted == total["uncachedInputTokens"] + total["cacheReadTokens"]
    costs = [p.value for (metric, _), p in usage.items() if metric == names.COST]
    assert sum(costs) == pytest.approx(detail["costUsd"], rel=1e-12)


def _assert_context_and_compactions(
    usage: dict[tuple[str, Any], Point], detail: Any, ledger: Any
) -> None:
    assert by(usage, names.USED) == {(): detail["usedTokens"]}
    assert by(usage, names.WINDOW) == {(): detail["windowTokens"]}
    assert by(usage, names.POINT) == {(): detail["thresholdTokens"]}
    forecasts = by(usage, names.FORECAST, **{names.NEXT: 1})
    expected = {("pass",): detail["forecast"]["steps"], ("summary",): detail["summaryForecast"]}
    expected[("summary",)] = expected[("summary",)]["steps"]
    assert forecasts == {k: v for k, v in expected.items() if v is not None}
    done: dict[tuple[str], int] = {}
    for row in ledger["folds"]:
        if row["status"] == "done":
            done[(row["kind"],)] = done.get((row["kind"],), 0) + 1
    assert by(usage, names.COMPACTIONS, **{names.KIND: 1}) == done
    assert by(usage, names.PRUNES) == {(): detail["prunes"]}
    shadowed = sum(row["shadowed_tokens"] for row in ledger["folds"] if row["status"] == "done")
    assert sum(by(usage, names.SHADOWED, **{names.KIND: 1}).values()) == shadowed
    bought = sum(max(0, row["bought"] or 0) for row in ledger["folds"] if row["status"] == "done")
    assert by(usage, names.FREED) == {(): bought}


def _assert_spans(spans: list[Span], ledger: Any, past: set[int]) -> None:
    rows = {row["number"]: row for row in ledger["folds"]}
    # Every compaction settled since (a summary ended, a prune pass followed by another step).
    numbers = sorted(span.attrs["dshweb.compaction.number"] for span in spans)
    assert past and numbers == [n for n in sorted(rows) if n not in past]
    assert len(numbers) >= 8
    assert len({span.span_id for span in spans}) == len(spans)
    for span in spans:
        row = rows[span.attrs["dshweb.compaction.number"]]
        assert span.trace_id == trace_id("local", SESSION).to_bytes(16, "big")
        assert span.span_id == span_id("local", SESSION, row["seq"]).to_bytes(8, "big")
        assert span.parent == b""
        assert span.name == f"compaction {row['kind']}"
        assert span.start == row["time_ms"] * 1_000_000
        attrs = span.attrs
        assert attrs["dshweb.compaction.kind"] == row["kind"]
        assert attrs["dshweb.compaction.shadowed_tokens"] == row["shadowed_tokens"]
        assert attrs["dshweb.compaction.checkpoint_tokens"] == row["checkpoint_tokens"]
        assert attrs["dshweb.context.before"] == row["before"]
        assert attrs["dshweb.context.after"] == row["after"]
        assert attrs["dshweb.compaction.freed"] == row["bought"]
        assert attrs.get("dshweb.compaction.cost_usd") == (
            None if row["summary_usd"] is None else pytest.approx(row["summary_usd"], rel=1e-12)
        )
        if row["kind"] == "prune":
            assert attrs["dshweb.compaction.prunes"] == row["prunes"]
            assert names.USAGE_INPUT not in attrs and "dshweb.compaction.cost_usd" not in attrs
        else:
            inputs = row["summary_input"] + row["summary_cache_read"] + row["summary_cache_write"]
            assert attrs[names.USAGE_INPUT] == inputs
            assert attrs[names.USAGE_OUTPUT] == row["summary_output"]
            assert attrs[names.CACHE_READ] == row["summary_cache_read"]
            assert attrs[names.MODEL] == row["summary_model"].rsplit("/", 1)[-1]
            assert attrs["dshweb.compaction.cost_usd"] > 0
        assert span.status == ((2, row["error"]) if row["error"] else (0, ""))
    assert {row["kind"] for n, row in rows.items() if n in numbers} == {"automatic", "prune"}


def test_a_collector_that_hangs_or_is_gone_never_stalls_the_hub(
    cut: CutHome, caplog: pytest.LogCaptureFixture
) -> None:
    """The export waits on a collector that accepts and never answers: meanwhile the hub
    folds the append; the collector gone, the requests are dropped and counted (the
    outage said once); a collector back on that port gets the newest figures."""
    hanging = socket.socket()
    hanging.bind((HOST, 0))
    hanging.listen(8)  # connections wait in its backlog: never accepted, never answered
    port = hanging.getsockname()[1]
    hub = current_hub()
    hub.wait_ready(60)
    dropped = COUNTS.dropped["metrics"]
    caplog.set_level(logging.WARNING, logger="dshweb.otlp")
    export = LiveExport(hub, "local", target(f"http://{HOST}:{port}"), timeout=8.0).start()
    try:
        _wait(lambda: export.rounds >= 1, "the first export")
        cut.grow()
        _wait(lambda: (hub.view().session(SESSION) or _no()).last_seq == _last_seq(), "the fold")
        # Folded while the export still waits on the collector.
        assert _outage(export) is None and COUNTS.dropped["metrics"] == dropped
        hanging.close()  # what it held is reset: the collector is gone
        _wait(lambda: COUNTS.dropped["metrics"] > dropped, "a drop counted", timeout=30)
        assert _outage(export) is not None
        scraped = _scrape()
        assert scraped[("dshweb_otlp_dropped_total", "metrics")] == COUNTS.dropped["metrics"]
        assert scraped[("dshweb_otlp_dropped_total", "metrics")] > dropped
        requests = sum(row["requests"] for row in api(SESSION)["cost"]["byModel"])
        with receiving(port) as (_, received):
            # What a retry still held may come first; then the newest figures.
            received.wait_for(lambda r: folded_through(r, requests), 60, "the newest figures")
            _wait(lambda: export.outage_since is None, "the outage's end")
    finally:
        export.stop()
    said = [r.getMessage() for r in caplog.records if "collector" in r.getMessage()]
    assert len(said) == 2, said  # the outage, once, and its end
    assert f"{HOST}:{port}" in said[0] and "takes it again" in said[1]


def _outage(export: LiveExport) -> float | None:
    return export.outage_since


def _no() -> Any:
    raise AssertionError("the session is gone")


def _wait(what: Any, why: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {why}"
        time.sleep(0.05)


def _scrape() -> dict[tuple[str, str], float]:
    from prometheus_client.parser import text_string_to_metric_families

    answer = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    return {
        (sample.name, sample.labels.get("signal", "")): sample.value
        for family in text_string_to_metric_families(answer.content.decode())
        for sample in family.samples
        if sample.name.startswith("dshweb_otlp_")
    }


@pytest.mark.asyncio
async def test_the_job_beside_the_hub_exports_only_when_on(cut: CutHome, settings: Any) -> None:
    with receiving() as (base, received):
        hub = await asyncio.to_thread(current_hub)
        await asyncio.to_thread(hub.wait_ready, 60)
        job = ExportJob(hub, "local")
        task = asyncio.create_task(job.run())
        await asyncio.sleep(0.5)
        assert job.export is None and received.requests["metrics"] == 0  # off by default
        task.cancel()
        settings.DSHWEB = {**settings.DSHWEB, "OTLP": target(base, interval=0.2)}
        hub = await asyncio.to_thread(current_hub)
        job = ExportJob(hub, "local")
        task = asyncio.create_task(job.run())
        await asyncio.to_thread(received.wait_for, lambda r: r.requests["metrics"] >= 2)
        task.cancel()
        await asyncio.wait({task})
        assert job.export is not None and job.export._thread is not None
        assert not job.export._thread.is_alive()  # stopped with its job
    assert otlp_live.exporting.name == "dshweb-otlp"
