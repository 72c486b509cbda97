"""Where a settings page's data comes from: this process's own home, or a collected home's
collector, asked over the channel layer.

A settings page (:mod:`dshweb.profiles.views`) asks its :class:`Place` for data in the
settings protocol (:mod:`dshweb.profiles.service`: a verb and JSON-like arguments, a
JSON-like answer) and renders the answer itself. :data:`OWN_HOME` calls the service in
this process. A :class:`CollectedHome` (``/homes/<home>/settings/…`` on a web worker,
``DSHWEB_COLLECT=off``, which reads no DSH home) sends the verb to the home's collector
(:func:`~dshweb.collect.commands.ask_collector`, sealed: a collector acts only on what a
process holding the secret key sent); the collector (:func:`run_settings_request`) calls
the same service on its own home, where the patch files are, and answers with the data.

The worker has checked the login, the staff flag and the CSRF token, and validated the
form against the plugin's schema; the collector validates the config again, and records
a save as the user the worker names. What never travels: the ``dsh web`` launch token
(the engine page of a collected home says to set it in the collector's environment) and
the files, which only the collector reads and writes. A collector that is not running,
or does not answer within :data:`ANSWER_TIMEOUT`, is a page saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import close_old_connections
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _

from dshweb.collect.commands import (
    CollectorNotRunning,
    CollectorPlace,
    CollectorSilent,
    answer,
    ask_collector,
    collector_address,
)
from dshweb.collect.settings_access import staff_only
from dshweb.collect.shown import shown_homes
from dshweb.core.errors import DshError
from dshweb.live.protocol import SettingsQuestion, sent
from dshweb.live.service import collecting, own_home_name
from dshweb.profiles import service

log = logging.getLogger(__name__)

ANSWER_TIMEOUT = 60.0
"""Seconds a worker waits for a collector's answer (``dsh --dump-config`` of a profile
can take seconds)."""


class Unanswered(DshError):
    """The collector could not be asked, or did not answer; ``status`` is the page's."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True, slots=True)
class Place:
    """Where a settings page's data is read and its saves are written."""

    name: str
    """The home's name (its revisions are recorded under it)."""
    host: str = ""
    collected: bool = False
    """Answered by the home's collector (its pages live under ``/homes/<name>/``)."""

    def url(self, name: str, *args: Any) -> str:
        """The address of settings page ``name``: under ``/homes/<name>/`` when collected."""
        url = reverse(f"dashboard:{name}", args=args)
        return f"/homes/{self.name}{url}" if self.collected else url

    def ask(self, verb: str, **arguments: Any) -> Any:
        """The service's answer to ``verb``; :class:`service.NotFound` alike."""
        if not self.collected:
            return service.ACTIONS[verb](**arguments)
        question = SettingsQuestion(type="settings.request", verb=verb, arguments=arguments)
        try:
            reply = ask_collector(self.name, sent(question), timeout=ANSWER_TIMEOUT)
        except CollectorSilent as silent:
            raise Unanswered(str(silent), 504) from silent
        if "not_found" in reply:
            raise service.NotFound(str(reply["not_found"]))
        if "failed" in reply:
            raise Unanswered(str(reply["failed"]), 502)
        return reply["data"]


def settings_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A settings view, staff only, called with the :class:`Place` of its home: this
    process's own for ``/settings/…``, the collector of ``<home>`` for
    ``/homes/<home>/settings/…``. A page whose data cannot be had says why."""

    @wraps(view)
    def page(request: HttpRequest, *args: Any, home: str | None = None, **kwargs: Any) -> Any:
        try:
            if home is None:
                return staff_only(own)(request, *args, **kwargs)
            return collected(request, home, *args, **kwargs)
        except service.NotFound as missing:
            raise Http404(str(missing)) from missing

    def own(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return view(request, Place(own_home_name()), *args, **kwargs)

    def collected(request: HttpRequest, home: str, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied(_("Only staff users may change DSH settings."))
        if collecting() and home == own_home_name():  # this process's own home: its pages
            return HttpResponseRedirect(request.get_full_path().removeprefix(f"/homes/{home}"))
        shown = shown_homes().home(home)
        if shown is None or not shown.collected:
            raise Http404(f"no collected home {home!r}")
        place = Place(home, shown.host, collected=True)
        try:
            collector_address(home)
            return view(request, place, *args, **kwargs)
        except CollectorNotRunning as offline:
            return unanswered(request, place, str(offline), 503)
        except Unanswered as silent:
            return unanswered(request, place, str(silent), silent.status)

    return page


def unanswered(request: HttpRequest, place: Place, reason: str, status: int) -> HttpResponse:
    context = {"settings_home": place, "reason": reason}
    return render(request, "settings/carried_unanswered.html", context, status=status)


@settings_page
def collected_engine(request: HttpRequest, place: Place) -> HttpResponse:
    """The engine page of a collected home: set in its collector's environment."""
    return render(request, "settings/carried_engine.html", {"settings_home": place}, status=409)


# -- the collector ------------------------------------------------------------------------


def run_settings_request(message: Mapping[str, Any], place: CollectorPlace) -> None:
    """In a collector: answer a worker's question about this collector's home."""
    close_old_connections()
    verb = str(message.get("verb", ""))
    action = service.ACTIONS.get(verb)
    try:
        if action is None:
            raise LookupError(f"no settings question {verb!r}")
        reply: dict[str, Any] = {"data": action(**dict(message.get("arguments") or {}))}
    except service.NotFound as missing:
        reply = {"not_found": str(missing)}
    except Exception:
        log.exception("collector %s: the settings question %r failed", place.name, verb)
        reply = {"failed": "The collector failed on this page; see its log."}
    finally:
        close_old_connections()
    answer(message, reply)
