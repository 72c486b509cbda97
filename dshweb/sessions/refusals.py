"""The session a page or a download is about, or the page saying why there is none: what
the views and the exports of a session share, so that neither imports the other.

:func:`session_or_refusal` gives the session now (:func:`~dshweb.sessions.selectors.find_session`)
or the page for why not: its home cannot be read (503, with the reason), the session is not
there (404) or not read yet (503, and the page reloads). :func:`worker_refusal` is what a
web worker (``DSHWEB_COLLECT=off``) answers to what needs the home's files.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.middleware import HtmxDetails

from dshweb.core.fold.progress import FoldProgress
from dshweb.live.homes import Homes, ShownHome
from dshweb.live.hub import SessionView
from dshweb.sessions.selectors import HOME_UNAVAILABLE, Found, find_session

NOT_ON_A_WORKER = 503


class HtmxHttpRequest(HttpRequest):
    """A request with django-htmx's details (``request.htmx``)."""

    htmx: HtmxDetails


def worker_refusal(request: HttpRequest, what: str) -> HttpResponse:
    """What a web worker (``DSHWEB_COLLECT=off``) answers to an action that needs the DSH
    home: not built there yet (it will travel to the home's collector)."""
    return render(request, "dashboard/worker_refusal.html", {"what": what}, status=NOT_ON_A_WORKER)


def home_error(request: HttpRequest, homes: Homes) -> HttpResponse:
    """The page saying why the homes cannot be read (503)."""
    home = homes.shown[0].view.home if homes.shown else None
    return render(
        request,
        "dashboard/home_error.html",
        {"home": home, "error": homes.error},
        status=HOME_UNAVAILABLE,
    )


def session_or_refusal(
    request: HttpRequest, home: str, session_id: str
) -> tuple[ShownHome, SessionView, FoldProgress] | HttpResponse:
    """Session ``session_id`` of home ``home`` now (with its home, and how far the first
    read of the homes has got), or the page saying why there is none
    (:func:`~dshweb.sessions.selectors.find_session`)."""
    found = find_session(home, session_id)
    if isinstance(found, Found):
        return found.shown, found.view, found.progress
    if found.home_error is not None:
        return home_error(request, found.homes)
    shown = found.shown  # or not read yet: the page says which, and reloads
    return render(
        request,
        "dashboard/session_missing.html",
        {
            "session_id": session_id,
            "home_name": home,
            "home": shown.view.home if shown is not None else None,
            "progress": found.progress,
        },
        status=found.status,
    )
