"""The read-only JSON API, ``/api/v1/``: what the pages show, for scripts and notebooks.

django-ninja serves it and generates its OpenAPI document (``/api/v1/openapi.json``; its page,
``/api/v1/docs``, is :mod:`dshweb.api.docs`) from the schemas here. It reads the homes shown as
the pages do (:mod:`dshweb.live.service`: nothing is folded for a request) and never
changes anything. Every call needs the browser's session or a personal token
(``Authorization: Bearer dshweb_…``, :mod:`dshweb.accounts.tokens`), with the
permissions of the pages: any signed-in user sees every session. An answer that cannot
be given says why in ``{"detail": …}``: 401 without a login, 404 for an unknown home or
session, 503 while a home cannot be read or has not been read that far.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.urls import URLPattern
from django.views import defaults
from ninja import NinjaAPI, Query, Schema
from ninja.errors import HttpError

from dshweb.accounts.tokens import BearerToken, BrowserSession
from dshweb.collect.shown import shown_homes
from dshweb.config import get_config
from dshweb.core.fold.gauge import Band, ContextGauge, context_percent
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.query import ListQuery, SessionState, SortKey
from dshweb.core.listing.spend import Amount, Burn, SpendReport
from dshweb.core.profile.effective import effective_settings
from dshweb.core.profile.profile import profile_names
from dshweb.live.hub import SessionView
from dshweb.live.service import collecting
from dshweb.sessions.display.ledger_rows import (
    COMPACTION_COLUMNS,
    REFUSED_COLUMNS,
    TIMELINE_COLUMNS,
    compaction_rows,
    refused_row,
    timeline_rows,
)
from dshweb.sessions.selectors import Found, find_session, spend_of
from dshweb.sessions.step_exports import step_download

api = NinjaAPI(
    title="dshweb",
    version="1",
    description="The context of DeepSeek Harness sessions, read-only.",
    urls_namespace="api",
    auth=[BrowserSession(), BearerToken()],
    docs_url=None,  # the page is dshweb.api.docs
)

BandName = Literal["ample", "moderate", "tight", "critical", "unknown"]
Value = int | float | str | None


class Problem(Schema):
    detail: str


class Invalid(Schema):
    """One value the call refused: where (``loc``) and why (``msg``)."""

    type: str
    loc: list[str | int]
    msg: str
    ctx: dict[str, Any] | None = None


class Refused(Schema):
    """422: a query value of the wrong kind (``sort=null``), each named."""

    detail: list[Invalid]


class KnownValue(Schema):
    """A setting an estimate went by: its value (``low`` = ``high``) or the range it lies
    in (``null``: nothing bounds that end), and where that came from."""

    low: int | None
    high: int | None
    source: Literal["recorded", "profile", "catalogue", "inferred", "unknown"]


class Forecast(Schema):
    """Steps (and minutes) until the next fold: ``steps`` expected, ``stepsLow`` to
    ``stepsHigh`` (``null`` with ``steps`` given: open above, "``stepsLow`` or more");
    all ``null`` and ``reason`` when there is none. ``point``: the compaction point it
    went by; ``pace``: whose pace (``session``: its own steps, ``home``: this home's other
    sessions on the same model, before it has steps of its own)."""

    steps: int | None
    stepsLow: int | None
    stepsHigh: int | None
    minutes: float | None
    reason: str | None
    point: KnownValue
    pace: Literal["session", "home"] | None


class TokenBuckets(Schema):
    uncachedInputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int


class ModelCost(Schema):
    """One model's requests and summaries; ``usd`` is ``null`` for a model without a price
    (never 0)."""

    model: str
    provider: str
    pricedAs: str | None
    match: Literal["exact", "substring", "ollama", "none"]
    alias: str | None
    effectiveDate: str | None
    requests: int
    tokens: TokenBuckets
    usd: float | None
    summaryTokens: TokenBuckets
    summaryUsd: float | None


class Registry(Schema):
    package: str
    version: str


class FoldsCost(Schema):
    """Every fold: its summary and the prefix sent again (``costUsd``), what the requests
    after it did not send (``notResentUsd``); ``unpriced``: some fold was on a model
    without a price, left out of both."""

    costUsd: float
    notResentUsd: float
    unpriced: bool


class Cost(Schema):
    """What the session cost so far, priced by the ``dsh-llm-cost`` registry."""

    registry: Registry
    peakWindowsUtc: list[str]
    totalUsd: float | None
    unpriced: bool
    byModel: list[ModelCost]
    folds: FoldsCost


class SessionRow(Schema):
    home: str
    sessionId: str
    title: str | None
    cwd: str | None
    live: bool
    heldBy: str | None
    """Who holds the session's lock, where dshweb knows: ``dsh-web``, a ``dsh web`` this
    dshweb runs (after a Compact it keeps the session until it stops; DSH cannot open it
    elsewhere meanwhile); else ``null``."""
    band: BandName
    usedTokens: int | None
    windowTokens: int | None
    percent: int | None
    thresholdTokens: int | None
    headroomTokens: int | None
    lastEventTime: int | None
    forecast: Forecast
    """The next pass of the engine's check: a prune or a summary."""
    summaryForecast: Forecast
    """The next automatic summary (after the prunes that come before it)."""
    costUsd: float | None
    """Every priced request and summary so far (``null``: no model of it has a price)."""
    costUnpriced: bool
    """Some of its requests are on a model without a price (left out of ``costUsd``)."""


class SessionPage(Schema):
    page: int
    pages: int
    perPage: int
    matched: int
    sessions: list[SessionRow]


class SessionDetail(SessionRow):
    """``dsh_snapshot --json``'s fields, and the band and gauge the pages show."""

    path: str
    formatVersion: int
    createdAt: int | None
    parentSession: str | None
    origin: str | None
    model: str | None
    lastSeq: int
    events: int
    turns: int
    compactions: int
    prunes: int
    tokenUsage: dict[str, int]
    contextPressure: dict[str, int]
    contextBreakdown: dict[str, int]
    compaction: dict[str, Any]
    told: dict[str, Any] | None
    cost: Cost
    errors: list[str]
    tailBytes: int
    """Bytes at the log's end that are not a whole event yet: a write under way (``live``)
    or a tail torn when DSH stopped writing; the figures are those of ``lastSeq``, before
    them."""


class TimelinePoint(Schema):
    seq: int
    time: str | None
    time_ms: int | None
    tokens: int
    role: str
    fold: int | None
    percent: int | None


class Timeline(Schema):
    home: str
    sessionId: str
    windowTokens: int | None
    thresholdTokens: int | None
    points: list[TimelinePoint]


class Ledger(Schema):
    home: str
    sessionId: str
    folds: list[dict[str, Value]]
    refused: list[dict[str, Value]]


class Bands(Schema):
    moderateAt: float
    tightAt: float
    hysteresis: float


class Engine(Schema):
    thresholdRatio: float
    headroomTokens: int
    retainRatio: float
    retainTokens: int | None


class ProfileSettings(Schema):
    home: str
    profile: str
    engine: Engine | None
    bands: Bands
    error: str | None


class Profiles(Schema):
    profiles: list[ProfileSettings]
    elsewhere: list[str]
    """Homes whose profiles live on their collector's machine, not read here."""


class SessionFilter(Schema):
    home: str = ""
    folder: str = ""
    live: bool | None = None
    band: Band | None = None
    q: str = ""
    sort: SortKey = SortKey.ACTIVITY
    page: int = 1
    per_page: int = 50


def _row(home: str, snapshot: SessionSnapshot, gauge: ContextGauge, now_ms: int) -> dict[str, Any]:
    cost, unpriced = get_config().rate_book.total(snapshot.cost)
    return {
        "home": home,
        "sessionId": snapshot.session_id,
        "title": snapshot.title,
        "cwd": snapshot.cwd,
        "live": snapshot.live,
        "heldBy": snapshot.held_by,
        **gauge.as_json(),
        "lastEventTime": snapshot.last_time,
        "forecast": snapshot.forecast(now_ms).as_json(),
        "summaryForecast": snapshot.summary_forecast(now_ms).as_json(),
        "costUsd": cost,
        "costUnpriced": unpriced,
    }


def _now_ms() -> int:
    return int(time.time() * 1000)


def _session(home: str, session_id: str) -> SessionView:
    found = find_session(home, session_id)
    if isinstance(found, Found):
        return found.view
    if found.home_error is not None:
        raise HttpError(503, found.home_error)
    if found.status == 404:
        raise HttpError(404, f"no session {session_id!r} in home {home!r}")
    raise HttpError(found.status, "the home has not been read that far yet; ask again soon")


ERRORS: dict[int, type[Schema]] = {401: Problem, 404: Problem, 503: Problem}


@api.get("/sessions", response={200: SessionPage, 401: Problem, 422: Refused, 503: Problem})
def sessions(request: HttpRequest, filters: Query[SessionFilter]) -> dict[str, Any]:
    """Sessions, newest activity first (or by ``sort``), filtered and paged as the list."""
    homes = shown_homes()
    if homes.error is not None:
        raise HttpError(503, homes.error)
    state = (
        SessionState.ALL
        if filters.live is None
        else SessionState.LIVE
        if filters.live
        else SessionState.IDLE
    )
    query = ListQuery(
        q=filters.q[:200],
        state=state,
        band=filters.band,
        sort=filters.sort,
        page=min(max(1, filters.page), 10_000),
        per_page=min(max(1, filters.per_page), 500),
        home=filters.home,
        folder=filters.folder,
    )
    page = homes.listing.page(query, get_config().rate_book)
    now = _now_ms()
    return {
        "page": page.page,
        "pages": page.pages,
        "perPage": page.query.per_page,
        "matched": page.matched,
        "sessions": [_row(e.home, e.snapshot, e.gauge, now) for e in page.rows],
    }


SESSION = "/homes/{home}/sessions/{path:session_id}"


@api.get(SESSION + "/timeline", response={200: Timeline} | ERRORS)
def session_timeline(request: HttpRequest, home: str, session_id: str) -> dict[str, Any]:
    """Every point of the pressure timeline (each step, each fold's before and after, and
    now), with its percent of the window."""
    view = _session(home, session_id)
    snapshot, gauge = view.snapshot, view.gauge
    points = []
    for row in timeline_rows(snapshot.ledger.points):
        point = dict(zip(TIMELINE_COLUMNS, row, strict=True))
        point["percent"] = context_percent(int(point["tokens"] or 0), gauge.window)
        points.append(point)
    return {
        "home": home,
        "sessionId": snapshot.session_id,
        "windowTokens": gauge.window,
        "thresholdTokens": gauge.threshold,
        "points": points,
    }


class StepRowSchema(Schema):
    step: int
    seq: int
    time: str | None
    time_ms: int | None
    pressure: int | None
    projected: int | None
    window: int | None
    threshold: int | None
    percent: int | None
    band: BandName
    uncached_input: int
    output: int
    cache_read: int
    cache_write: int


class Steps(Schema):
    home: str
    session: str
    steps: list[StepRowSchema]
    error: str | None


@api.get(SESSION + "/steps", response={200: Steps} | ERRORS)
def session_steps(request: HttpRequest, home: str, session_id: str) -> HttpResponseBase:
    """Every step, read afresh from the log and streamed (the session page's "every
    step" download): pressure, projected, window, point, percent, band, usage so far.
    Only where the log is (503 on a web worker)."""
    if not collecting():
        raise HttpError(503, "a session's steps are read from its log, on its collector's host")
    _session(home, session_id)  # 404 / 503 in the API's own words first
    return step_download(request, home, session_id, "json")


@api.get(SESSION + "/ledger", response={200: Ledger} | ERRORS)
def session_ledger(request: HttpRequest, home: str, session_id: str) -> dict[str, Any]:
    """Every fold, oldest first, and every ``/compact`` that folded nothing."""
    ledger = _session(home, session_id).snapshot.ledger
    return {
        "home": home,
        "sessionId": session_id,
        "folds": [
            dict(zip(COMPACTION_COLUMNS, row, strict=True))
            for row in compaction_rows(
                ledger.compactions, get_config().rate_book, first=ledger.first
            )
        ],
        "refused": [
            dict(zip(REFUSED_COLUMNS, refused_row(command), strict=True))
            for command in ledger.refused
        ],
    }


@api.get(SESSION, response={200: SessionDetail} | ERRORS)
def session(request: HttpRequest, home: str, session_id: str) -> dict[str, Any]:
    """One session: the fields of ``dsh_snapshot --json``, the band and gauge the pages
    show, the fold forecast and what the model was last told."""
    view = _session(home, session_id)
    now = _now_ms()
    book = get_config().rate_book
    return view.snapshot.as_json(now, book) | _row(home, view.snapshot, view.gauge, now)


@api.get("/profiles", response={200: Profiles, 401: Problem})
def profiles(request: HttpRequest) -> dict[str, Any]:
    """The effective compaction and band settings of each profile of the home this process
    reads (a collected home's live on its collector's machine: named in ``elsewhere``)."""
    homes = shown_homes()
    found = []
    if collecting():
        for shown in homes.shown:
            for name in profile_names(shown.view.home):
                settings = effective_settings(shown.view.home, name)
                engine = settings.engine
                rule = settings.rule
                found.append(
                    {
                        "home": shown.name,
                        "profile": name,
                        "engine": None
                        if engine is None
                        else {
                            "thresholdRatio": engine.threshold_ratio,
                            "headroomTokens": engine.headroom_tokens,
                            "retainRatio": engine.retain_ratio,
                            "retainTokens": engine.retain_tokens,
                        },
                        "bands": {
                            "moderateAt": rule.moderate_at,
                            "tightAt": rule.tight_at,
                            "hysteresis": rule.hysteresis,
                        },
                        "error": settings.error,
                    }
                )
    elsewhere = [] if collecting() else list(homes.names)
    return {"profiles": found, "elsewhere": elsewhere}


class Spent(Schema):
    """Dollars of what has a price; ``unpriced``: some requests in it are on a model
    without one, left out (``usd`` is ``null`` when none had one: unknown, never 0)."""

    usd: float | None
    unpriced: bool


class DayCost(Spent):
    date: str
    """The day, in the server's time zone (``2026-09-02``)."""


class WeekCost(Spent):
    week: str
    """The ISO week (``2026-W36``)."""
    start: str
    """Its Monday."""


class ProjectCost(Spent):
    folder: str
    """DSH's project folder (``--home-me-app--``)."""
    cwd: str | None
    """The working folder most of its sessions ran in."""
    sessions: int


class BurnRate(Spent):
    """What was spent from ``since`` to ``now`` (epoch ms: the quarter hour now under way
    and those before it), and per hour."""

    since: int
    now: int
    usdPerHour: float | None


class CostReport(Schema):
    """What every shown session cost, as the cost page shows it."""

    timeZone: str
    registry: Registry
    total: Spent
    undated: Spent
    """Requests at no known time (in their project's total, on no day)."""
    lastHour: BurnRate
    lastDay: BurnRate
    days: list[DayCost]
    """The last 14 days, today first."""
    weeks: list[WeekCost]
    """The last 8 ISO weeks, this one first."""
    projects: list[ProjectCost]
    """The dearest first."""


def _spent(amount: Amount) -> dict[str, Any]:
    return {"usd": amount.usd, "unpriced": amount.unrated}


def _burn(burn: Burn) -> dict[str, Any]:
    return {
        **_spent(burn.amount),
        "since": burn.since_ms,
        "now": burn.now_ms,
        "usdPerHour": burn.per_hour,
    }


def cost_report_json(report: SpendReport, version: str) -> dict[str, Any]:
    return {
        "timeZone": report.zone,
        "registry": {"package": "dsh-llm-cost", "version": version},
        "total": _spent(report.total),
        "undated": _spent(report.undated),
        "lastHour": _burn(report.last_hour),
        "lastDay": _burn(report.last_day),
        "days": [{"date": d.day.isoformat(), **_spent(d.amount)} for d in report.days],
        "weeks": [
            {
                "week": f"{w.iso[0]}-W{w.iso[1]:02d}",
                "start": w.start.isoformat(),
                **_spent(w.amount),
            }
            for w in report.weeks
        ],
        "projects": [
            {"folder": p.folder, "cwd": p.cwd or None, "sessions": p.sessions, **_spent(p.amount)}
            for p in report.projects
        ],
    }


@api.get("/cost", response={200: CostReport, 401: Problem, 503: Problem})
def cost(request: HttpRequest) -> dict[str, Any]:
    """What every shown session cost: by day and ISO week (in the server's time zone), by
    project, and the burn rate; the cost page's figures."""
    homes = shown_homes()
    if homes.error is not None:
        raise HttpError(503, homes.error)
    return cost_report_json(spend_of(homes), get_config().rate_book.version)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404 for a path no view answers: under ``/api/`` the API's JSON ``{"detail"}`` (a
    session id holding a newline matches no route), elsewhere the site's page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not Found"}, status=404)
    return defaults.page_not_found(request, exception)


def api_urls() -> tuple[tuple[list[URLPattern], str], str]:
    """The API's URL patterns for ``include()``: its calls answer 401 themselves (a JSON
    body, not the sign-in page's redirect), and so does the OpenAPI document (it holds
    no data)."""
    patterns, app_name, namespace = api.urls
    found = [pattern for pattern in patterns if isinstance(pattern, URLPattern)]
    for pattern in found:
        setattr(pattern.callback, "login_required", False)  # noqa: B010 (login_not_required)
    return (found, app_name), namespace
