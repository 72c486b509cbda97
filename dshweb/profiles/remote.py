"""The settings pages of a collected home, served by a web worker and answered by the home's
collector: the profile patch files are read and written on the home's own machine.

A web worker (``DSHWEB_COLLECT=off``) reads no DSH home, so ``/homes/<home>/settings/…``
(:func:`home_settings`) carries the request to the collector of ``<home>`` as a question
over the channel layer (:func:`~dshweb.collect.commands.ask_collector`): the method, the
settings path, the form's fields, the signed-in user, the worker's CSRF secret and any
messages waiting to be shown, sealed (:func:`~dshweb.collect.commands.seal`: a collector
acts only on what a process holding the secret key sent). The worker has checked the
login, the staff flag and the CSRF token already; the collector
(:func:`run_settings_request`) checks the CSRF token of a POST again, against the
worker's secret, then runs the very settings view the embedded server runs (its form's
validation, its audit as that user), on its own home, and answers with the status, the page's
content (laid out by ``settings/_carried.html``: the worker puts it in its own layout),
a redirect, and the messages the view added, which the worker shows next. Its links and
forms point under ``/homes/<home>/`` (``{% settings_url %}``), and its forms carry a CSRF
token for the worker's cookie, so the next save comes back the same way.

What never travels: the ``dsh web`` launch token (the engine page of a collected home
says to set it in the collector's environment, and is not carried), and the files, which
only the collector writes. A collector that is not running, or does not answer within
:data:`ANSWER_TIMEOUT`, is a page saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages.storage.base import BaseStorage, Message
from django.core.exceptions import PermissionDenied
from django.db import close_old_connections
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.middleware.csrf import CsrfViewMiddleware, get_token
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods
from django_htmx.middleware import HtmxDetails

from dshweb.collect.commands import (
    CollectorNotRunning,
    CollectorPlace,
    CollectorSilent,
    answer,
    ask_collector,
    collector_address,
)
from dshweb.collect.shown import shown_homes
from dshweb.live.protocol import SETTINGS_REQUEST
from dshweb.live.service import collecting, own_home_name

log = logging.getLogger("dshweb.dashboard")

ANSWER_TIMEOUT = 60.0
"""Seconds a worker waits for a collector's settings page (``dsh --dump-config`` of a
profile can take seconds)."""
CARRIED = "carried_for_home"
"""The request attribute naming the home a collector answers a settings page for."""
SETTINGS = "/settings/"
ENGINE_PAGE = "engine/"
_NOT_CARRIED = ("settings-dsh-web",)
"""Settings pages that stay on their machine: the engine's holds the launch token."""


def carried_home(request: HttpRequest | None) -> str | None:
    """The home this request's settings page is answered for by its collector, if any."""
    home = getattr(request, CARRIED, None)
    return home if isinstance(home, str) else None


# -- the web worker ---------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def home_settings(request: HttpRequest, home: str, rest: str = "") -> HttpResponse:
    """``/homes/<home>/settings/<rest>``: the settings page ``/settings/<rest>`` of ``home``."""
    if not request.user.is_staff:
        raise PermissionDenied("Only staff users may change DSH settings.")
    query = f"?{request.GET.urlencode()}" if request.GET else ""
    if collecting() and home == own_home_name():  # this process's own home: its own pages
        return HttpResponseRedirect(SETTINGS + rest + query)
    shown = shown_homes().home(home)
    if shown is None or not shown.collected:
        raise Http404(f"no collected home {home!r}")
    context = {"home_name": home, "host": shown.host}
    if rest.startswith(ENGINE_PAGE):
        return render(request, "settings/carried_engine.html", context, status=409)
    try:
        collector_address(home)
    except CollectorNotRunning as offline:
        return _unanswered(request, context, str(offline), 503)
    get_token(request)  # the CSRF cookie the collector's forms are signed for
    question = {
        "type": SETTINGS_REQUEST,
        "method": request.method,
        "path": SETTINGS + rest,
        "query": request.GET.urlencode(),
        "body": request.POST.urlencode() if request.method == "POST" else "",
        "user": request.user.pk,
        "csrf": request.META["CSRF_COOKIE"],
        "csrf_header": request.headers.get("X-CSRFToken", ""),
        "htmx": bool(request.headers.get("HX-Request")),
        "messages": [[m.level, m.message] for m in messages.get_messages(request)],
    }
    try:
        reply = ask_collector(home, question, timeout=ANSWER_TIMEOUT)
    except CollectorSilent as silent:
        return _unanswered(request, context, str(silent), 504)
    for level, text in reply.get("messages", []):
        messages.add_message(request, int(level), str(text))
    location = str(reply.get("location") or "")
    if location:
        prefixed = f"/homes/{home}{location}" if location.startswith(SETTINGS) else location
        return HttpResponseRedirect(prefixed)
    status, body = int(reply.get("status", 500)), str(reply.get("body", ""))
    if question["htmx"]:  # a fragment (the preview): as the collector rendered it
        return HttpResponse(body, status=status)
    return render(
        request, "settings/carried.html", {**context, "content": mark_safe(body)}, status=status
    )


def _unanswered(
    request: HttpRequest, context: Mapping[str, Any], reason: str, status: int
) -> HttpResponse:
    return render(
        request, "settings/carried_unanswered.html", {**context, "reason": reason}, status=status
    )


# -- the collector ------------------------------------------------------------------------


class _CarriedMessages(BaseStorage):
    """The worker's waiting messages, shown by this page; what the view adds goes back."""

    def __init__(self, request: HttpRequest, carried: list[list[Any]]) -> None:
        super().__init__(request)
        self._carried = [Message(int(level), str(text)) for level, text in carried]
        self.left: list[list[Any]] = []

    def _get(self, *args: Any, **kwargs: Any) -> tuple[list[Message], bool]:
        return self._carried, True

    def _store(
        self, messages: list[Message], response: Any, *args: Any, **kwargs: Any
    ) -> list[Message]:
        self.left = [[m.level, m.message] for m in messages]
        return []


def _no_response(request: HttpRequest) -> HttpResponse:
    raise AssertionError("only CsrfViewMiddleware.process_view is called")


def run_settings_request(message: Mapping[str, Any], place: CollectorPlace) -> None:
    """In a collector: answer a worker's settings page of this collector's home."""
    close_old_connections()
    try:
        reply = _settings_reply(message, place)
    except Exception:
        log.exception("collector %s: a settings page failed", place.name)
        reply = {"status": 500, "body": "<p>The collector failed on this page; see its log.</p>"}
    finally:
        close_old_connections()
    answer(message, {"messages": [], "location": "", **reply})


def _settings_reply(message: Mapping[str, Any], place: CollectorPlace) -> dict[str, Any]:
    path, query, method = str(message["path"]), str(message["query"]), str(message["method"])
    try:
        match = resolve(path)
    except Resolver404:
        return {"status": 404, "body": "<p>There is no such settings page.</p>"}
    if not (match.url_name or "").startswith("settings") or match.url_name in _NOT_CARRIED:
        return {"status": 404, "body": "<p>That page is not carried to a collector.</p>"}
    request = HttpRequest()
    request.method = method
    request.path = request.path_info = path
    request.GET = QueryDict(query)
    if method == "POST":
        request.POST = QueryDict(str(message["body"]))
    request.META.update(SERVER_NAME=place.name, SERVER_PORT="80", REQUEST_METHOD=method)
    request.META["QUERY_STRING"] = query
    if message.get("htmx"):
        request.META["HTTP_HX_REQUEST"] = "true"
    user = get_user_model().objects.filter(pk=int(message["user"])).first()
    request.user = user if user is not None else AnonymousUser()
    request.META["CSRF_COOKIE"] = str(message["csrf"])  # the worker's: its forms come back there
    request.COOKIES[settings.CSRF_COOKIE_NAME] = str(message["csrf"])
    if message.get("csrf_header"):
        request.META["HTTP_X_CSRFTOKEN"] = str(message["csrf_header"])
    request.htmx = HtmxDetails(request)  # type: ignore[attr-defined]
    setattr(request, CARRIED, place.name)
    storage = _CarriedMessages(request, list(message.get("messages", [])))
    request._messages = storage  # type: ignore[attr-defined]
    refused = CsrfViewMiddleware(_no_response).process_view(
        request, match.func, match.args, match.kwargs
    )
    if refused is not None:
        log.warning("collector %s: a settings POST without a valid CSRF token", place.name)
        return {"status": 403, "body": "<p>The form's security token did not match.</p>"}
    try:
        response = match.func(request, *match.args, **match.kwargs)
    except Http404 as missing:
        return {"status": 404, "body": format_html("<p>{}</p>", str(missing))}
    except PermissionDenied as refused:
        return {"status": 403, "body": format_html("<p>{}</p>", str(refused))}
    storage.update(response)
    location = response["Location"] if response.status_code in (301, 302, 303) else ""
    body = "" if location else response.content.decode()
    return {
        "status": response.status_code,
        "body": body,
        "location": location,
        "messages": storage.left,
    }
