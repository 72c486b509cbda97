"""Where a settings page's data comes from: this process's own home, or a collected home's
collector, asked over the channel layer.

A settings page (:mod:`dshweb.profiles.views`) is given the :class:`Place` of its home
and calls the typed methods of its ``settings`` (the settings protocol,
:class:`~dshweb.profiles.pages.HomeSettings`), then renders the answer itself.
:data:`~dshweb.profiles.service.OWN_HOME` answers in this process. A
:class:`CollectedHome` (``/homes/<home>/settings/…`` on a web worker,
``DSHWEB_COLLECT=off``, which reads no DSH home) sends the question to the home's
collector (:func:`~dshweb.collect.commands.ask_collector`, sealed: a collector acts only on
what a process holding the secret key sent); the collector (:func:`run_settings_request`)
asks its own home, where the patch files are, and answers with the data. Both ends read
what they are sent through :mod:`dshweb.profiles.wire`: an answer this version cannot
read is a page saying so (502), never a traceback.

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
from typing import Any, TypeVar

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
from dshweb.live.protocol import sent
from dshweb.live.service import collecting, own_home_name
from dshweb.profiles.pages import (
    BrokenRow,
    Config,
    HomeSettings,
    IndexPage,
    NotFound,
    PreviewPage,
    ReplayPage,
    RestoreOutcome,
    RowPage,
    SaveOutcome,
    Which,
)
from dshweb.profiles.service import OWN_HOME
from dshweb.profiles.wire import (
    Answer,
    IndexQuestion,
    Malformed,
    PreviewQuestion,
    ProfilesQuestion,
    Question,
    ReplayQuestion,
    RestoreQuestion,
    RowQuestion,
    SaveQuestion,
    answer_data,
    asked,
    question_message,
    read_answer,
    read_question,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

ANSWER_TIMEOUT = 60.0
"""Seconds a worker waits for a collector's answer (``dsh --dump-config`` of a profile
can take seconds)."""


class Unanswered(DshError):
    """The collector could not be asked, or did not answer; ``status`` is the page's."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True, slots=True)
class CollectedHome:
    """The settings protocol answered by the collector of home ``name``, asked over the
    channel layer; raises :class:`Unanswered` when it cannot be asked, does not answer,
    fails, or answers what this version of dshweb cannot read."""

    name: str

    def profiles(self) -> tuple[str, ...]:
        return self._ask(ProfilesQuestion(), Answer[tuple[str, ...]])

    def index(self) -> IndexPage:
        return self._ask(IndexQuestion(), Answer[IndexPage])

    def row(self, profile: str, section: str) -> RowPage | BrokenRow:
        return self._ask(RowQuestion(profile=profile, section=section), Answer[RowPage | BrokenRow])

    def save(
        self,
        *,
        profile: str,
        section: str,
        config: Config,
        sha256: str,
        base_text: str,
        user_id: int | None,
    ) -> SaveOutcome:
        question = SaveQuestion(
            profile=profile,
            section=section,
            config=config,
            sha256=sha256,
            base_text=base_text,
            user_id=user_id,
        )
        return self._ask(question, Answer[SaveOutcome])

    def preview(self, *, profile: str, config: Config, session_id: str) -> PreviewPage:
        question = PreviewQuestion(profile=profile, config=config, session_id=session_id)
        return self._ask(question, Answer[PreviewPage])

    def replay(
        self, *, profile: str, section: str, config: Config, session_id: str, pruner: bool | None
    ) -> ReplayPage:
        question = ReplayQuestion(
            profile=profile, section=section, config=config, session_id=session_id, pruner=pruner
        )
        return self._ask(question, Answer[ReplayPage])

    def restore(self, *, revision_id: int, which: Which, user_id: int | None) -> RestoreOutcome:
        question = RestoreQuestion(revision_id=revision_id, which=which, user_id=user_id)
        return self._ask(question, Answer[RestoreOutcome])

    def _ask(self, question: Question, shape: type[Answer[T]]) -> T:
        try:
            reply = ask_collector(
                self.name, sent(question_message(question)), timeout=ANSWER_TIMEOUT
            )
        except CollectorSilent as silent:
            raise Unanswered(str(silent), 504) from silent
        if "not_found" in reply:
            raise NotFound(str(reply["not_found"]))
        if "failed" in reply:
            raise Unanswered(str(reply["failed"]), 502)
        try:
            return read_answer(reply.get("data"), shape)
        except Malformed as problem:
            verb = question_message(question)["verb"]
            log.warning("the collector of %s answered %r unreadably: %s", self.name, verb, problem)
            reason = _(
                "The collector of %(home)s answered in a form this dshweb cannot read "
                "(%(problem)s): is it another version of dshweb? Run the same version on both."
            )
            raise Unanswered(reason % {"home": self.name, "problem": problem}, 502) from None


@dataclass(frozen=True, slots=True)
class Place:
    """Where a settings page's data is read and its saves are written."""

    name: str
    """The home's name (its revisions are recorded under it)."""
    host: str = ""
    collected: bool = False
    """Answered by the home's collector (its pages live under ``/homes/<name>/``)."""

    @property
    def settings(self) -> HomeSettings:
        """The home's settings: this process's own, or asked of its collector."""
        return CollectedHome(self.name) if self.collected else OWN_HOME

    def url(self, name: str, *args: object) -> str:
        """The address of settings page ``name``: under ``/homes/<name>/`` when collected."""
        url = reverse(f"dashboard:{name}", args=args)
        return f"/homes/{self.name}{url}" if self.collected else url


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
        except NotFound as missing:
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
    verb = str(message.get("verb", ""))[:80]
    reply: dict[str, object]
    try:
        reply = {"data": answer_data(asked(OWN_HOME, read_question(message)))}
    except Malformed as problem:
        log.warning("collector %s: a settings question %r unread: %s", place.name, verb, problem)
        reply = {"failed": f"The collector could not read the question: {problem}"}
    except NotFound as missing:
        reply = {"not_found": str(missing)}
    except Exception:
        log.exception("collector %s: the settings question %r failed", place.name, verb)
        reply = {"failed": "The collector failed on this page; see its log."}
    finally:
        close_old_connections()
    answer(message, reply)
