"""Server-rendered pages: the sessions list and one page per session.

Views only translate: :mod:`dshweb.dashboard.selectors` reads the home, the pure
:mod:`dshweb.core.display` turns a snapshot into what is shown. Each page is a base
layout around partials with stable ids, so htmx (and later the live socket) can
replace one fragment at a time; an htmx request gets the fragment alone.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe
from django_htmx.middleware import HtmxDetails

from dshweb.core.display import breakdown_parts, cache_hit_ratio, context_reading
from dshweb.core.listing import session_tree
from dshweb.dashboard.selectors import HomeReading, home_reading, session_snapshot

HOME_UNAVAILABLE = 503


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _home_error(request: HttpRequest, reading: HomeReading) -> HttpResponse:
    return render(
        request,
        "dashboard/home_error.html",
        {"home": reading.home, "error": reading.error},
        status=HOME_UNAVAILABLE,
    )


@require_safe
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    reading = home_reading()
    if reading.error is not None:
        return _home_error(request, reading)
    template = "dashboard/_session_table.html" if request.htmx else "dashboard/session_list.html"
    return render(request, template, {"entries": session_tree(reading.snapshots)})


@require_safe
def session_detail(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    reading = home_reading()
    if reading.error is not None:
        return _home_error(request, reading)
    snapshot = session_snapshot(reading, session_id=session_id)
    if snapshot is None:
        return render(
            request,
            "dashboard/session_missing.html",
            {"session_id": session_id, "home": reading.home},
            status=404,
        )
    template = "dashboard/_session.html" if request.htmx else "dashboard/session_detail.html"
    return render(
        request,
        template,
        {
            "session": snapshot,
            "reading": context_reading(snapshot),
            "breakdown": breakdown_parts(snapshot.context_breakdown),
            "cache_hit": cache_hit_ratio(snapshot.token_usage),
        },
    )
