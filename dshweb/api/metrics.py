"""``/metrics``: the sessions' context in the Prometheus text format (``prometheus_client``).

Named by Prometheus's rules: a unit in each name (``_tokens``, ``_usd``, ``_seconds``,
``_steps``), ``_ratio`` for a share (0–1), ``_total`` for a counter; every series is in
docs/alerts-api-metrics.md. Labels are bounded: per-session series (``home``,
``session``, ``project``) only for each live session and, of those active in the last
:data:`RECENT_MS`, the newest :data:`RECENT_SESSIONS`; everything else is per home (and
model, kind or channel). A figure a session does not have now (a forecast while it
idles) has no sample. The per-home counters are :mod:`dshweb.api.tallies`': a scrape
adds up what the hub keeps, counts again only the sessions that changed, and folds
nothing. The Grafana dashboard and the Prometheus rules in :data:`MONITORING` name only
these series (``tests/api/test_monitoring.py``).

A scrape needs ``Authorization: Bearer <token>``: ``DSHWEB_METRICS_TOKEN``, or a personal
API token (:mod:`dshweb.accounts.tokens`); otherwise 401.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from django.contrib.auth.decorators import login_not_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from dshweb.accounts.tokens import token_user
from dshweb.alerts.models import AlertDelivery
from dshweb.alerts.watcher import watching
from dshweb.api.tallies import FAILURES, FREED, KINDS, HomeTally, Tallies
from dshweb.collect.shown import shown_homes
from dshweb.config import get_config
from dshweb.core.fold.gauge import Band
from dshweb.core.fold.meter import BUCKET_KEYS
from dshweb.live.hub import HomeView, SessionView
from dshweb.live.service import running_hub
from dshweb.live.startup import server_loop
from dshweb.otlp.send import ExportCollector

MONITORING = Path(__file__).with_name("monitoring")
"""The Grafana dashboard and the Prometheus rules, shipped in the package."""
RECENT_MS = 60 * 60 * 1000
"""A session idle for longer (and not live) has no per-session series."""
RECENT_SESSIONS = 50
"""At most this many sessions that are not live have series of their own (the newest)."""
SESSION_GAUGES = (
    ("used_tokens", "Tokens in the context now (projected, else the last pressure sample)."),
    ("window_tokens", "The model's context window."),
    ("threshold_tokens", "The compaction point: an automatic fold starts at or above it."),
    ("used_ratio", "Used over the window, 0-1 (DSH's ring shows it as a rounded percent)."),
    ("headroom_tokens", "The compaction point minus used (negative past it)."),
    ("forecast_steps", "Expected steps until the next automatic fold (dshweb's forecast)."),
    (
        "summariser_forecast_steps",
        "Expected steps until the next automatic summary, after the prunes before it.",
    ),
    ("band_level", "The band: 0 ample, 1 moderate, 2 tight, 3 critical (none while unknown)."),
    ("last_event_timestamp_seconds", "When the session's log last had an event (Unix time)."),
    ("live", "1 while a DSH process holds the session (its lock), else 0."),
)
BAND_LEVELS = {Band.AMPLE: 0, Band.MODERATE: 1, Band.TIGHT: 2, Band.CRITICAL: 3}
TOKENS_HELP = f"kind: {', '.join(BUCKET_KEYS[:-1])} or {BUCKET_KEYS[-1]}"


def session_figures(view: SessionView, now_ms: int) -> dict[str, float | None]:
    """One session's per-session series (``None``: no sample)."""
    shot, gauge = view.snapshot, view.gauge
    used, window = gauge.used, gauge.window
    return {
        "used_tokens": used,
        "window_tokens": window,
        "threshold_tokens": gauge.threshold,
        "used_ratio": used / window if used is not None and window else None,
        "headroom_tokens": gauge.headroom,
        "forecast_steps": shot.forecast(now_ms).steps,
        "summariser_forecast_steps": shot.summary_forecast(now_ms).steps,
        "band_level": BAND_LEVELS.get(gauge.band),
        "last_event_timestamp_seconds": None if shot.last_time is None else shot.last_time / 1000,
        "live": int(shot.live),
    }


class SessionCollector(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies = Tallies()

    def collect(self) -> Iterator[Metric]:
        homes = shown_homes()
        now = int(time.time() * 1000)
        since = now - RECENT_MS
        book = get_config().rate_book
        with self._lock:
            tallies = self._tallies.follow(
                {shown.name: shown.view for shown in homes.shown}, book, since
            )
            families = [*_session_families(tallies, now, since), *_home_families(tallies)]
        yield from families
        yield _alerts_sent()


def _session_families(
    tallies: list[tuple[HomeView, HomeTally]], now: int, since: int
) -> Iterator[Metric]:
    labels = ["home", "session", "project"]
    gauges = {
        name: GaugeMetricFamily(f"dshweb_session_{name}", text, labels=labels)
        for name, text in SESSION_GAUGES
    }
    for home_view, tally in tallies:
        home = home_view.name
        for view in tally.shown_sessions(since, RECENT_SESSIONS):
            names = [home, view.snapshot.session_id, view.snapshot.cwd or ""]
            for name, value in session_figures(view, now).items():
                if value is not None:
                    gauges[name].add_metric(names, value)
    yield from gauges.values()


def _home_families(tallies: list[tuple[HomeView, HomeTally]]) -> Iterator[Metric]:
    folds = CounterMetricFamily(
        "dshweb_folds", "Folds that ended well, by kind.", labels=["home", "kind"]
    )
    failures = CounterMetricFamily(
        "dshweb_fold_failures", "Folds or summaries that failed.", labels=["home"]
    )
    freed = CounterMetricFamily(
        "dshweb_freed_tokens", "Tokens the folds freed (before - after).", labels=["home"]
    )
    tokens = CounterMetricFamily(
        "dshweb_tokens",
        f"The requests' tokens (DSH's tokenUsage) by model and {TOKENS_HELP}.",
        labels=["home", "model", "kind"],
    )
    summariser_tokens = CounterMetricFamily(
        "dshweb_summariser_tokens",
        f"The summariser's tokens (not part of tokenUsage) by model and {TOKENS_HELP}.",
        labels=["home", "model", "kind"],
    )
    cost = CounterMetricFamily(
        "dshweb_cost_usd",
        "What the requests and summaries cost in US dollars, by model (models the "
        "dsh-llm-cost registry rates; the peak windows of this server).",
        labels=["home", "model"],
    )
    errors = GaugeMetricFamily(
        "dshweb_reader_errors", "Sessions whose log has a reader error.", labels=["home"]
    )
    count = GaugeMetricFamily("dshweb_sessions", "Sessions in the home.", labels=["home"])
    for view, tally in tallies:
        home, sums = view.name, tally.sums
        for kind in KINDS:
            folds.add_metric([home, kind], sums.get(("folds", kind), 0))
        failures.add_metric([home], sums.get(FAILURES, 0))
        freed.add_metric([home], sums.get(FREED, 0))
        for family, name in ((tokens, "tokens"), (summariser_tokens, "summariser_tokens")):
            for labels, value in tally.sums_of(name):
                family.add_metric([home, *labels], value)
        for labels, value in tally.sums_of("cost"):
            cost.add_metric([home, *labels], value)
        errors.add_metric([home], 0 if view.error else tally.errors)
        count.add_metric([home], len(view.sessions))
    yield from (folds, failures, freed, tokens, summariser_tokens, cost, errors, count)


def _alerts_sent() -> Metric:
    sent = CounterMetricFamily(
        "dshweb_alerts_sent", "Alert deliveries sent, by channel.", labels=["channel"]
    )
    counts = dict(
        AlertDelivery.objects.filter(state=AlertDelivery.State.SENT)
        .values_list("channel")
        .annotate(n=Count("id"))
        .values_list("channel", "n")
    )
    for channel in AlertDelivery.Channel.values:
        sent.add_metric([channel], counts.get(channel, 0))
    return sent


class RoundsCollector(Collector):
    """How long ago the process's hub and its alert watcher last went round."""

    def collect(self) -> Iterator[Metric]:
        now = time.monotonic()
        hub = running_hub()
        rounds = GaugeMetricFamily(
            "dshweb_hub_last_round_age_seconds",
            "Seconds since the hub last went round (folding what changed; every second or "
            "so while it works).",
            labels=["home"],
        )
        if hub is not None and hub.round_at is not None:
            rounds.add_metric([hub.name], now - hub.round_at)
        yield rounds
        watched = GaugeMetricFamily(
            "dshweb_alert_watcher_last_round_age_seconds",
            "Seconds since the alert watcher last went round (its rules against what "
            "changed, and the deliveries due; every second or so while it works).",
            labels=["home"],
        )
        watcher = watching.job
        if watcher is not None and watcher.round_at is not None:
            watched.add_metric([watcher.home], now - watcher.round_at)
        yield watched


class RuntimeCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "dshweb_threads", "Threads of the process.", threading.active_count()
        )
        tasks = GaugeMetricFamily("dshweb_event_loop_tasks", "Tasks on the event loop.")
        loop = server_loop()
        if loop is not None:  # the server's (no sample in a process without one)
            tasks.add_metric([], len(asyncio.all_tasks(loop)))
        yield tasks


sessions = SessionCollector()
"""The per-session series and each home's counters (counting since this process started)."""
registry = CollectorRegistry(auto_describe=False)
registry.register(sessions)
registry.register(RoundsCollector())
registry.register(RuntimeCollector())
registry.register(ExportCollector())  # dshweb_otlp_sent_total, dshweb_otlp_dropped_total
ProcessCollector(registry=registry)
PlatformCollector(registry=registry)


def _allowed(request: HttpRequest) -> bool:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    expected = get_config().metrics_token
    if expected and hmac.compare_digest(token.encode(), expected.encode()):
        return True
    return token_user(token) is not None


@login_not_required  # the bearer token is its login
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        answer = HttpResponse("a bearer token is needed\n", status=401, content_type="text/plain")
        answer["WWW-Authenticate"] = 'Bearer realm="dshweb metrics"'
        return answer
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
