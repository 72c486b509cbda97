"""``dshweb export-otlp``: a home's whole history through the OpenTelemetry SDK's OTLP/HTTP
exporters to a receiver on 127.0.0.1, with the events' own times; sent twice, the same
data points and spans, so a backend keeps the series once."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from dshweb.core.fold.cost import REGISTRY_RATES
from dshweb.core.fold.index import HomeIndex
from dshweb.core.log.home import session_logs
from dshweb.environment_otlp import OtlpTarget
from dshweb.otlp import names
from dshweb.otlp.backfill import Report, backfill
from dshweb.otlp.figures import settled
from dshweb.otlp.send import Sender
from tests.support.homes import home_of_fixtures
from tests.support.logbuilder import event, frame, header
from tests.support.otlp_receiver import Point, Span, receiving

SESSIONS = ("auto-compact", "cost-switch", "fold-failures", "manual-compact", "plain-turns")
STEP_MS = 1_000
"""The fixtures were recorded in seconds: a reading per second of them, not per minute."""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return home_of_fixtures(tmp_path_factory.mktemp("backfill") / "home", SESSIONS)


def target(base: str) -> OtlpTarget:
    return OtlpTarget(f"{base}/v1/metrics", f"{base}/v1/traces")


def run(home: Path, since_ms: int | None = None) -> tuple[Report, list[Point], list[Span]]:
    with receiving() as (base, received):
        sender = Sender(target(base))
        try:
            report = backfill(
                home,
                name="local",
                profile="sdk",
                sender=sender,
                book=REGISTRY_RATES,
                since_ms=since_ms,
                step_ms=STEP_MS,
            )
        finally:
            sender.close()
        points, spans = received.snapshot()
    return report, points, spans


def keyed(points: list[Point]) -> dict[tuple[Any, ...], Any]:
    """Each point by what a backend files it under: its series and its time."""
    found: dict[tuple[Any, ...], Any] = {}
    for point in points:
        key = (*point.series, point.time)
        assert found.setdefault(key, point.value) == point.value, f"two values at {key}"
    return found


def test_the_backfill_sent_twice_is_the_same_series_once(home: Path) -> None:
    report, points, spans = run(home)
    again, points_again, spans_again = run(home)

    assert report == again
    assert (report.points, report.spans) == (len(points), len(spans))
    first, second = keyed(points), keyed(points_again)
    assert len(first) == len(points)  # no point sent twice within a run
    assert first == second  # the same points, times and values: each series once
    assert keyed(points + points_again) == first
    assert sorted(spans, key=_span_key) == sorted(spans_again, key=_span_key)
    assert len({s.span_id for s in spans}) == len(spans)

    shots = {}
    for log in session_logs(home):
        index = HomeIndex(home, profile="sdk")
        index.refresh([log.session_dir])
        shot = index.snapshot(log.session_dir)
        shots[shot.session_id] = shot
    assert report.sessions == len(SESSIONS) and set(shots) == set(SESSIONS)
    for session_id, shot in shots.items():
        _assert_history(session_id, shot, [p for p in points if _of(p, session_id)])
        mine = [s for s in spans if s.attrs[names.CONVERSATION] == session_id]
        expected = [shot.ledger.first + i for i in settled(shot.ledger.compactions)]
        assert sorted(s.attrs["dshweb.compaction.number"] for s in mine) == expected
        for span in mine:
            compaction = shot.ledger.compactions[span.attrs["dshweb.compaction.number"] - 1]
            assert span.start == compaction.time * 1_000_000  # the events' own times
            assert span.end == compaction.end_time * 1_000_000
    assert Counter(s.attrs[names.KIND] for s in spans).keys() == {
        "automatic",
        "manual",
        "overflow",
        "prune",
    }
    assert {s.status[0] for s in spans} == {0, 2}  # fold-failures' failed summary: an error


def _of(point: Point, session_id: str) -> bool:
    return bool(point.attrs[names.CONVERSATION] == session_id)


def _span_key(span: Span) -> bytes:
    return span.span_id


def _assert_history(session_id: str, shot: Any, points: list[Point]) -> None:
    """Stamped with the session's own events' times, from its start; the last reading of
    each series is the whole log's figure."""
    assert {p.start for p in points if p.kind != "gauge"} == {shot.created_at * 1_000_000}
    times = sorted({p.time for p in points})
    assert shot.first_time * 1_000_000 <= times[0] and times[-1] == shot.last_time * 1_000_000
    assert len(times) >= 2 or shot.last_time - shot.first_time < STEP_MS
    newest: dict[tuple[Any, ...], Point] = {}
    for point in points:
        if point.series not in newest or point.time > newest[point.series].time:
            newest[point.series] = point
    histograms = [p for p in newest.values() if p.metric == names.TOKEN_USAGE]
    usage = shot.token_usage
    inputs = sum(p.value[1] for p in histograms if p.attrs[names.TOKEN_TYPE] == "input")
    assert inputs == usage["uncachedInputTokens"] + usage["cacheReadTokens"]
    outputs = sum(p.value[1] for p in histograms if p.attrs[names.TOKEN_TYPE] == "output")
    assert outputs == usage["outputTokens"]
    cumulative = [p for p in points if p.metric == names.TOKEN_USAGE]
    for series in {p.series for p in cumulative}:
        counts = [
            p.value[0] for p in sorted(cumulative, key=lambda p: p.time) if p.series == series
        ]
        assert counts == sorted(counts), f"{session_id}: a count went down"
    assert all(p.temporality == 2 for p in points if p.kind != "gauge")  # cumulative
    assert all(p.monotonic for p in points if p.kind == "sum")


def test_since_sends_the_part_of_a_full_run_from_then_on(home: Path) -> None:
    _, points, spans = run(home)
    times = sorted({p.time for p in points})
    since_ns = times[len(times) // 2]
    report, later, later_spans = run(home, since_ms=since_ns // 1_000_000)
    assert later and all(p.time >= since_ns for p in later)
    assert keyed(later) == {k: v for k, v in keyed(points).items() if k[-1] >= since_ns}
    assert sorted(later_spans, key=_span_key) == sorted(
        (s for s in spans if s.end >= since_ns), key=_span_key
    )
    assert report.points == len(later) < len(points)


@pytest.mark.django_db
def test_the_command_says_what_it_sent_and_why_it_stopped(home: Path, settings: Any) -> None:
    out = io.StringIO()
    with receiving() as (base, received):
        settings.DSHWEB = {**settings.DSHWEB, "OTLP": target(base)}
        call_command("dshweb_export_otlp", "--home", str(home), "--since", "2026-01-01", stdout=out)
        points, spans = received.snapshot()
        said = out.getvalue()
        assert f"to {base}/v1/metrics and {base}/v1/traces" in said
        assert f"{len(SESSIONS)} session(s) read, {len(points)} data point(s) and " in said
        assert f"{len(spans)} span(s) sent" in said and spans
        received.refuse = True
        with pytest.raises(CommandError) as refused:
            call_command("dshweb_export_otlp", "--home", str(home), stdout=io.StringIO())
    assert refused.value.returncode == 1
    assert "0 data point(s)" in str(refused.value) and "HTTP" not in str(refused.value)
    assert "run it again once it answers" in str(refused.value)
    for options, words in (
        (["--since", "May 1st"], "--since: 'May 1st' is not a date"),
        (["--name", "a b"], "--name:"),
        (["--home", str(home / "missing")], "does not exist"),
    ):
        with pytest.raises(CommandError, match=words) as bad:
            call_command("dshweb_export_otlp", "--home", str(home), *options)
        assert bad.value.returncode == 2


def test_a_text_utf_8_cannot_hold_is_sent_mended(tmp_path: Path) -> None:
    """A model's name with a lone surrogate (valid in DSH's JavaScript strings, not in
    UTF-8), which the encoder would leave out of its series: it goes out as U+FFFD."""
    folder = tmp_path / "home" / "sessions" / "--w--" / "s-1"
    folder.mkdir(parents=True)
    answer = event(
        1,
        "assistant/message",
        turn=1,
        step=1,
        message={
            "role": "assistant",
            "content": [],
            "source": {"provider": "p", "model": "m\udce9"},
        },
        usage={"inputTokens": 10, "outputTokens": 2},
    )
    (folder / "session.v4.jsonl.zstd").write_bytes(frame(header("s-1"), event(0), answer))
    report, points, _ = run(tmp_path / "home")
    assert report.points == len(points) > 0
    models = {p.attrs.get(names.MODEL) for p in points} - {None}
    assert models == {"m\ufffd"}
