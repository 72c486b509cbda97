"""Server-rendered pages: the sessions list and one page per session.

Views only translate: they read the hub's view of the home
(:func:`~dshweb.live.service.home_view`: a request never folds), and the pure
:mod:`dshweb.dashboard.display` lays out what is shown. Each page is a base
layout around partials with stable ids, so htmx and the live socket can replace one
fragment at a time; the list's form and pager get the list section alone. The list is
filtered, sorted and paged here (``?q=…&state=…&band=…&sort=…&page=…``,
:mod:`dshweb.core.listing.query`): a page holds only its rows, whatever the home's size.
"""

from __future__ import annotations

import contextlib
from http import HTTPStatus

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST, require_safe
from django_htmx.http import push_url
from django_htmx.middleware import HtmxDetails

from dshweb.core.listing.query import list_query
from dshweb.dashboard import compact, fragments
from dshweb.dashboard.fragments import live_parts_html, session_context
from dshweb.live.hub import HomeView
from dshweb.live.service import collecting, home_view, shown_home_name

HOME_UNAVAILABLE = 503
NOT_ON_A_WORKER = 503


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def worker_refusal(request: HttpRequest, what: str) -> HttpResponse:
    """What a web worker (``DSHWEB_COLLECT=off``) answers to an action that needs the DSH
    home: not built there yet (it will travel to the home's collector)."""
    return render(request, "dashboard/worker_refusal.html", {"what": what}, status=NOT_ON_A_WORKER)


def _home_error(request: HttpRequest, home: HomeView) -> HttpResponse:
    return render(
        request,
        "dashboard/home_error.html",
        {"home": home.home, "error": home.error},
        status=HOME_UNAVAILABLE,
    )


@require_safe
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    home = home_view()
    if home.error is not None:
        return _home_error(request, home)
    page = home.listing.page(list_query(request.GET))
    context = {"progress": home.progress, **fragments.list_context(page)}
    if request.htmx and not request.htmx.history_restore_request:
        # The filter form, sort and pager ask for the list section alone; the address
        # shows the query as the server read it (defaults left out, page clamped).
        response = render(request, "dashboard/_session_table.html", context)
        push_url(response, fragments.list_url(page.query))
    else:
        response = render(request, "dashboard/session_list.html", context)
    patch_vary_headers(response, ("HX-Request",))
    return response


@require_safe
def session_detail(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    home = home_view()
    if home.error is not None:
        return _home_error(request, home)
    snapshot = home.session(session_id)
    if snapshot is None:  # or not read yet: the page says which, and reloads when done
        return render(
            request,
            "dashboard/session_missing.html",
            {"session_id": session_id, "home": home.home, "progress": home.progress},
            status=404 if home.progress.done else HOME_UNAVAILABLE,
        )
    view = home.sessions[session_id]
    compact.forget_records(session_id)  # its Compact status as the database has it now
    context = session_context(snapshot, view.gauge)
    context["live_parts"] = mark_safe(live_parts_html(view))  # rendered by our templates
    context["progress"] = home.progress
    return render(request, "dashboard/session_detail.html", context)


@require_safe
def fold_progress(request: HtmxHttpRequest) -> HttpResponse:
    """How far the first read of the home has got (polled by the progress bar); when it
    is done, an htmx poll reloads the page, now complete."""
    progress = home_view(wait=0).progress
    response = render(request, "dashboard/_fold_progress.html", {"progress": progress})
    if progress.done and request.htmx:
        response["HX-Refresh"] = "true"
    return response


@require_POST
def session_compact(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """Ask ``dsh web`` to fold this session now (a POST with CSRF, ``compact`` only); on
    a web worker, ask the home's collector to.

    The button's form swaps nothing: the status line reaches every open page of the
    session over its socket, and is on the page when it is loaded again. A press while a
    request is in flight changes nothing, and the line already says one is.
    """
    if not request.user.has_perm("dashboard.compact"):
        raise PermissionDenied("Your account may not compact sessions.")
    home = home_view()
    snapshot = home.session(session_id)
    if snapshot is None:
        raise Http404(f"no session {session_id!r}")
    seq, projected = snapshot.last_seq, snapshot.context_pressure.get("projectedTokens")
    with contextlib.suppress(compact.AlreadyRunning):
        if collecting():
            compact.request_compaction(
                session_id=session_id, user=request.user, seq=seq, projected=projected
            )
        else:  # a web worker: the home's collector runs it
            compact.request_collected_compaction(
                home_name=shown_home_name(),
                session_id=session_id,
                user=request.user,
                seq=seq,
                projected=projected,
            )
    if request.htmx:
        return HttpResponse(status=HTTPStatus.NO_CONTENT)
    return HttpResponseRedirect(reverse("dashboard:session-detail", args=[session_id]))
