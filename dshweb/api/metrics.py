"""``/metrics``: the sessions' context in the Prometheus text format (``prometheus_client``).

Per session, for the live sessions and those active in the last :data:`RECENT_MS` only
(the series a dashboard graphs; an ended session's stop, so the number of series follows
the sessions at work, not the home's size): ``dshweb_session_used_tokens``,
``…_window_tokens``, ``…_threshold_tokens``, ``…_percent``, ``…_headroom_tokens``,
``…_forecast_steps`` (the next pass of the engine's check, a prune or a summary),
``…_summary_forecast_steps`` (the next summary, after the prunes before it) and
``…_band_level``, labelled ``home``, ``session`` and ``project`` (the folder DSH ran in);
a figure the session does not have now (a forecast while it idles) has no sample. Per
home, over every session: ``dshweb_folds_total{kind}`` and ``dshweb_freed_tokens_total``
(what the folds bought, projected before − after), ``dshweb_reader_errors`` (sessions
whose log has an error now) and ``dshweb_sessions``; ``dshweb_alerts_sent_total{channel}``
counts the alert deliveries sent. In a process that reads its home,
``dshweb_hub_last_round_age_seconds`` and ``dshweb_alert_watcher_last_round_age_seconds``
(labelled ``home``; no sample before the first round) say how long ago the hub and the
alert watcher last went round: a second or so while they work, growing when one hangs.
Then the process's own (``process_*``, ``python_info``), its threads
(``dshweb_threads``) and the tasks on its event loop (``dshweb_event_loop_tasks``): what a
leak would grow.

The per-home sums are kept per session by the view's version of it, so a scrape adds up
kept numbers and folds nothing; a session counted again only when it changed.

A scrape needs ``Authorization: Bearer <token>``: ``DSHWEB_METRICS_TOKEN``, or a personal
API token (:mod:`dshweb.accounts.tokens`); otherwise 401.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
import time
from collections.abc import Iterator

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
from dshweb.collect.shown import shown_homes
from dshweb.config import get_config
from dshweb.core.fold.compactions import CompactionKind
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.gauge import Band
from dshweb.live.hub import SessionView
from dshweb.live.service import running_hub
from dshweb.live.startup import server_loop

RECENT_MS = 60 * 60 * 1000
"""A session idle for longer (and not live) has no per-session series."""
KINDS: tuple[CompactionKind, ...] = ("automatic", "manual", "overflow", "prune")
SESSION_GAUGES = (
    ("used_tokens", "Tokens in the context now (projected, else the last pressure sample)."),
    ("window_tokens", "The model's context window."),
    ("threshold_tokens", "The compaction point: an automatic fold starts at or above it."),
    ("percent", "Used over the window, as DSH's ring shows it."),
    ("headroom_tokens", "The compaction point minus used (negative past it)."),
    ("forecast_steps", "Expected steps until the next automatic fold (dshweb's forecast)."),
    (
        "summary_forecast_steps",
        "Expected steps until the next automatic summary, after the prunes before it.",
    ),
    ("band_level", "The band: 0 ample, 1 moderate, 2 tight, 3 critical (none while unknown)."),
)
BAND_LEVELS = {Band.AMPLE: 0, Band.MODERATE: 1, Band.TIGHT: 2, Band.CRITICAL: 3}

Tally = tuple[dict[CompactionKind, int], int, bool, dict[str, float]]
"""A session's folds by kind, the tokens they freed, whether its log has an error, and
what its requests and summaries cost by model (models with a price)."""


def _tally(view: SessionView, book: RateBook) -> Tally:
    tally = view.snapshot.ledger.tally()
    kinds = dict.fromkeys(KINDS, 0) | dict(tally.done)
    costs: dict[str, float] = {}
    for row in book.by_route(view.snapshot.cost):
        if row.dollars is not None:
            model = row.rates.route[0]
            costs[model] = costs.get(model, 0.0) + row.dollars
    return kinds, tally.freed, bool(view.snapshot.errors), costs


class SessionCollector(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies: dict[tuple[str, str], tuple[tuple[int, RateBook], Tally]] = {}
        """(home, session) → (the view's version and the rates it was costed by, its tally)."""

    def collect(self) -> Iterator[Metric]:
        homes = shown_homes()
        now = int(time.time() * 1000)
        labels = ["home", "session", "project"]
        gauges = {
            name: GaugeMetricFamily(f"dshweb_session_{name}", text, labels=labels)
            for name, text in SESSION_GAUGES
        }
        compactions = CounterMetricFamily(
            "dshweb_folds", "Folds that ended well, by kind.", labels=["home", "kind"]
        )
        freed = CounterMetricFamily(
            "dshweb_freed_tokens", "Tokens the folds freed (before - after).", labels=["home"]
        )
        errors = GaugeMetricFamily(
            "dshweb_reader_errors", "Sessions whose log has a reader error.", labels=["home"]
        )
        count = GaugeMetricFamily("dshweb_sessions", "Sessions in the home.", labels=["home"])
        cost = CounterMetricFamily(
            "dshweb_cost_usd",
            "What the requests and summaries cost, by model (models the dsh-llm-cost "
            "registry prices; the peak windows of this server).",
            labels=["home", "model"],
        )
        book = get_config().rate_book
        seen: set[tuple[str, str]] = set()
        with self._lock:
            for shown in homes.shown:
                home = shown.name
                by_kind, freed_sum, broken = dict.fromkeys(KINDS, 0), 0, 0
                by_model: dict[str, float] = {}
                for session_id, view in shown.view.sessions.items():
                    key = (home, session_id)
                    seen.add(key)
                    kept = self._tallies.get(key)
                    if kept is None or kept[0] != (view.version, book):
                        kept = ((view.version, book), _tally(view, book))
                        self._tallies[key] = kept
                    kinds, tokens, error, costs = kept[1]
                    for model, dollars in costs.items():
                        by_model[model] = by_model.get(model, 0.0) + dollars
                    for kind, n in kinds.items():
                        by_kind[kind] += n
                    freed_sum += tokens
                    broken += error
                    shot, gauge = view.snapshot, view.gauge
                    if not shot.live and (shot.last_time or 0) < now - RECENT_MS:
                        continue
                    values = {
                        "used_tokens": gauge.used,
                        "window_tokens": gauge.window,
                        "threshold_tokens": gauge.threshold,
                        "percent": gauge.percent,
                        "headroom_tokens": gauge.headroom,
                        "forecast_steps": shot.forecast(now).steps,
                        "summary_forecast_steps": shot.summary_forecast(now).steps,
                        "band_level": BAND_LEVELS.get(gauge.band),
                    }
                    names = [home, session_id, shot.cwd or ""]
                    for name, value in values.items():
                        if value is not None:
                            gauges[name].add_metric(names, value)
                for kind, n in by_kind.items():
                    compactions.add_metric([home, kind], n)
                freed.add_metric([home], freed_sum)
                errors.add_metric([home], broken)
                count.add_metric([home], len(shown.view.sessions))
                for model, dollars in sorted(by_model.items()):
                    cost.add_metric([home, model], dollars)
            for gone in set(self._tallies) - seen:
                del self._tallies[gone]
        yield from gauges.values()
        yield from (compactions, freed, errors, count, cost)
        yield _alerts_sent()


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
        loop = server_loop()
        if loop is not None:
            tasks = len(asyncio.all_tasks(loop))
            yield GaugeMetricFamily("dshweb_event_loop_tasks", "Tasks on the event loop.", tasks)


registry = CollectorRegistry(auto_describe=False)
registry.register(SessionCollector())
registry.register(RoundsCollector())
registry.register(RuntimeCollector())
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
