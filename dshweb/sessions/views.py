"""Server-rendered pages: the sessions list and one page per session.

Views only translate: they read the homes shown (:func:`~dshweb.collect.shown.shown_homes`:
a request never folds), and the pure :mod:`dshweb.sessions.display` lays out what is
shown. A session's address holds its home's name and its id
(``/homes/<home>/sessions/<id>/``). Each page is a base
layout around partials with stable ids, so htmx and the live socket can replace one
fragment at a time; the list's form and pager get the list section alone. The list is
filtered, sorted and paged here (``?q=…&state=…&band=…&sort=…&page=…``,
:mod:`dshweb.core.listing.query`): a page holds only its rows, whatever the home's size.
"""

from __future__ import annotations

import contextlib
from http import HTTPStatus

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe
from django_htmx.http import push_url

from dshweb.collect.shown import shown_homes
from dshweb.compaction import service as compact
from dshweb.compaction.which_dsh_web import NoCompact, demo_compacts, why_no_compact
from dshweb.config import get_config
from dshweb.core.fold.cost import window_text
from dshweb.core.listing.query import list_query
from dshweb.installed import add_extra
from dshweb.sessions import fragments
from dshweb.sessions.fragments import page_parts, session_context
from dshweb.sessions.refusals import HtmxHttpRequest, home_error, session_or_refusal
from dshweb.sessions.selectors import HOME_UNAVAILABLE, spend_of


def session_url(home: str, session_id: str) -> str:
    """A session's page (its home's name is part of its address)."""
    return reverse("dashboard:session-detail", args=[home, session_id])


@require_safe
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    homes = shown_homes()
    if homes.error is not None:
        return home_error(request, homes)
    page = homes.listing.page(list_query(request.GET), get_config().rate_book)
    context = {"progress": homes.progress, **fragments.list_context(page)}
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
def cost(request: HtmxHttpRequest) -> HttpResponse:
    """What every shown session cost: by day, by ISO week and by project, and the burn
    rate (:mod:`dshweb.core.listing.spend`)."""
    homes = shown_homes()
    if homes.error is not None:
        return home_error(request, homes)
    book = get_config().rate_book
    report = spend_of(homes)
    context = {
        "report": report,
        "burns": [(report.last_hour, "hour"), (report.last_day, "day")],
        "book": book,
        "windows": ", ".join(window_text(w) for w in book.windows),
        "progress": homes.progress,
    }
    return render(request, "dashboard/cost.html", context)


@require_safe
def session_detail(request: HtmxHttpRequest, home: str, session_id: str) -> HttpResponse:
    found = session_or_refusal(request, home, session_id)
    if isinstance(found, HttpResponse):
        return found
    shown, view, progress = found
    context = session_context(home, view.snapshot, view.gauge)
    # Its Compact status as the database has it now: this process may have heard nothing.
    context["compact"] = fragments.compact_status(home, view.snapshot, fresh=True)
    context["parts"] = page_parts(home, view)
    context["progress"] = progress
    context["shown_home"] = shown
    context["title_is_data"] = True  # the session's own title: <title translate="no">
    # A collected home's collector has its own dsh web; this process's is known here.
    context["no_compact"] = None if shown.collected else why_no_compact(session_id)
    context["demo_compacts"] = not shown.collected and demo_compacts()
    context["install_hint"] = add_extra("engine")
    return render(request, "dashboard/session_detail.html", context)


@require_safe
def session_in_any_home(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """A session's address without its home (dshweb's older links): its page in the one
    home that has it, else a page saying which homes do (or that none does)."""
    homes = shown_homes(wait=0)
    holding = homes.holding(session_id)
    if len(holding) == 1:
        return HttpResponseRedirect(session_url(holding[0], session_id))
    return render(
        request,
        "dashboard/session_missing.html",
        {"session_id": session_id, "holding": holding, "progress": homes.progress},
        status=404 if homes.progress.done or holding else HOME_UNAVAILABLE,
    )


@require_safe
def fold_progress(request: HtmxHttpRequest) -> HttpResponse:
    """How far the first read of the homes has got (polled by the progress bar); when it
    is done, an htmx poll reloads the page, now complete."""
    progress = shown_homes(wait=0).progress
    response = render(request, "dashboard/_fold_progress.html", {"progress": progress})
    if progress.done and request.htmx:
        response["HX-Refresh"] = "true"
    return response


@require_POST
def session_compact(request: HtmxHttpRequest, home: str, session_id: str) -> HttpResponse:
    """Ask ``dsh web`` to fold this session now (a POST with CSRF, ``compact`` only); for
    a collected home (a web worker), ask the home's collector to.

    The button's form swaps nothing: the status line reaches every open page of the
    session over its socket, and is on the page when it is loaded again. A press while a
    request is in flight changes nothing, and the line already says one is.
    """
    if not request.user.has_perm("compaction.compact"):
        raise PermissionDenied(_("Your account may not compact sessions."))
    shown = shown_homes().home(home)
    view = shown.view.sessions.get(session_id) if shown is not None else None
    if shown is None or view is None:
        raise Http404(f"no session {session_id!r} in home {home!r}")
    if not shown.collected and why_no_compact(session_id) is NoCompact.REPLAYED:
        # The demo's replay writes it: a dsh web that attached it would write there too.
        return HttpResponse(
            _("The demo plays this recorded session back: it cannot be compacted."),
            status=HTTPStatus.CONFLICT,
        )
    snapshot = view.snapshot
    seq, projected = snapshot.last_seq, snapshot.context_pressure.get("projectedTokens")
    request_one = (
        compact.request_collected_compaction if shown.collected else compact.request_compaction
    )
    with contextlib.suppress(compact.AlreadyRunning):
        request_one(
            home=home, session_id=session_id, user=request.user, seq=seq, projected=projected
        )
    if request.htmx:
        return HttpResponse(status=HTTPStatus.NO_CONTENT)
    return HttpResponseRedirect(session_url(home, session_id))
