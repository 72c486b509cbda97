"""WebSocket consumers: thin glue between a page and its Channels group.

On connect a consumer checks the login, joins its group and sends the current state of
its page, read from the homes shown (:mod:`dshweb.live.service`; nothing is folded for
it). After that it renders what the publisher (:mod:`dshweb.live.publisher`) says has
changed, off the event loop, and sends it, one render at a time and newest first
(:mod:`dshweb.live.renders`). Sockets only carry state to the browser:
nothing is changed through them. Every socket also joins its user's alerts group and
passes each of their alerts on as a notice, and lives no longer than its sign-in: it closes
with 4401 when that ends (:mod:`dshweb.accounts.socket_logins`). A list socket reads its
query as the page does; one the page would answer 400 is told why and closed with 4400.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from asgiref.sync import sync_to_async
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer, WebsocketConsumer
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.db import close_old_connections
from django.db.utils import InterfaceError, OperationalError
from django.http import HttpRequest, QueryDict
from django.utils import translation

from dshweb.accounts.logins import Login, login_of
from dshweb.accounts.socket_logins import check_soon, unwatch, watch
from dshweb.collect.shown import shown_homes, shown_session
from dshweb.compaction.status import remember
from dshweb.config import get_config
from dshweb.core.listing.pages import ListPage
from dshweb.core.listing.query import ListQuery, list_query
from dshweb.live.outage import database_unreachable, layer_unreachable, store_name
from dshweb.live.protocol import (
    SESSIONS_GROUP,
    account_group,
    alerts_group,
    session_group,
    signed_out_name,
)
from dshweb.live.publisher import start_publisher
from dshweb.live.renders import RenderQueue, merged_changes, newer_version
from dshweb.live.subscriptions import subscriptions
from dshweb.live.unavailable import STORE_UNAVAILABLE_CLOSE, say_unavailable
from dshweb.sessions import fragments
from dshweb.sessions.display.news import Heard

log = logging.getLogger(__name__)

BAD_REQUEST = 4400
UNAUTHORIZED = 4401
NOT_FOUND = 4404


class _PageConsumer(AsyncWebsocketConsumer):
    group: str
    alerts: str
    """The user's alerts group: every page with a socket shows their alerts."""
    account: str
    """The user's account group: told when their sign-in may have ended."""
    login: Login
    """The sign-in it opened with (:mod:`dshweb.accounts.socket_logins` checks it)."""
    _left = False

    @cached_property
    def renders(self) -> RenderQueue:
        """What the announcements ask this socket to render, run one at a time."""
        return RenderQueue(self._send_rendered, str(self.scope.get("path", "")))

    async def connect(self) -> None:
        start_publisher()
        login = login_of(self.scope)
        if login is None:
            # Accept, then close with a code the page understands as "signed out" (a
            # refused handshake looks like a network error, retried for ever).
            await self.accept()
            await self.close(code=UNAUTHORIZED)
            return
        refused = self.refusal()
        if refused is not None:
            await self.accept()
            await self.send(text_data=refused)
            await self.close(code=BAD_REQUEST, reason=refused)
            return
        self.login = login
        self.group = self.group_name()
        self.alerts = alerts_group(login.user_id)
        self.account = account_group(login.user_id)
        subscriptions.add(self.group)
        watch(self)
        for group in (self.group, self.alerts, self.account):
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        await self._send_rendered(self.current_html)

    def refusal(self) -> str | None:
        """Why the socket's address is a bad request (a person reads it), or None."""
        return None

    async def account_changed(self, event: dict[str, Any]) -> None:
        """The user signed out (this socket's session, or another), or their account
        changed (:mod:`dshweb.accounts.sign_outs`)."""
        ended = event.get("ended")
        if ended and ended == signed_out_name(self.login.session_key):
            await self.signed_out()
        elif not ended:
            check_soon()  # one check of every socket of this process, for any number told

    async def signed_out(self) -> None:
        """Its sign-in no longer holds: nothing more is sent, and the page hears 4401."""
        await self._leave()
        await self.close(code=UNAUTHORIZED)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Each message to its handler, without Channels' ``aclose_old_connections()``
        first: that hops to the main thread to look at its database connection, which
        no handler here uses (rendering reads the database in pool threads, and drops a
        broken connection itself): on a web worker it was a fifth of a socket push."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def disconnect(self, code: int) -> None:
        await self._leave()

    async def _leave(self) -> None:
        """Leave its groups and stop rendering (once: a socket closed for its sign-in
        leaves before the server says it is gone)."""
        if self._left:
            return
        self._left = True
        self.renders.stop()
        if not hasattr(self, "group"):
            return
        unwatch(self)
        subscriptions.remove(self.group)
        try:
            for group in (self.group, self.alerts, self.account):
                await self.channel_layer.group_discard(group, self.channel_name)
        except Exception as error:
            if not layer_unreachable(error):
                raise
            # Gone with the layer's Redis, or dropped by it after its expiry.

    @cached_property
    def language(self) -> str:
        """The page's language, as a page load chooses it: the language switch's cookie,
        else the browser's Accept-Language, else the default."""
        return language_of(self.scope)

    async def _send_rendered(self, render: Callable[..., object], *args: Any) -> None:
        """Send what ``render`` returns (HTML, or a list of messages), rendered off the
        event loop in the page's language."""
        if self._left:
            return
        try:
            rendered = await sync_to_async(_rendered, thread_sensitive=False)(
                self.language, render, *args
            )
        except (OperationalError, InterfaceError) as error:
            if not database_unreachable(error):
                raise
            say_unavailable(f"socket {self.scope.get('path', '')}", store_name(), error)
            # Closed, so the page reconnects later and is sent its state again.
            await self.close(code=STORE_UNAVAILABLE_CLOSE)
            return
        for html in [rendered] if isinstance(rendered, str) else rendered:
            if html and not self._left:
                await self.send(text_data=html)

    async def alert_fired(self, event: dict[str, Any]) -> None:
        """One of this user's alert rules fired (:mod:`dshweb.alerts.deliveries`): a notice on
        the page, which the page's script also shows as a system notification."""
        await self._send_rendered(fragments.alert_toast_html, event)

    def group_name(self) -> str:
        raise NotImplementedError

    def current_html(self) -> str | list[str]:
        raise NotImplementedError


def language_of(scope: Mapping[str, Any]) -> str:
    """The language a socket's page is in, by the rule of a page load
    (:func:`django.utils.translation.get_language_from_request`): its cookie, then its
    ``Accept-Language``."""
    request = HttpRequest()
    request.COOKIES = dict(scope.get("cookies") or {})
    for name, value in scope.get("headers", ()):
        if name == b"accept-language":
            request.META["HTTP_ACCEPT_LANGUAGE"] = value.decode("latin-1")
    return translation.get_language_from_request(request)


def _rendered(language: str, render: Any, *args: Any) -> Any:
    try:
        with translation.override(language):
            return render(*args)
    except (OperationalError, InterfaceError):
        # A pool thread's connection is never closed by a request's end: drop a broken one
        # here, or the next render on this thread fails on it after the database is back.
        close_old_connections()
        raise


class SessionsConsumer(_PageConsumer):
    """The sessions list: the page its query asks for (``/ws/sessions/?q=…&page=…``, the
    list view's parameters), then what changed on that page.

    After each change it works the page out again from the hub's view: while the page's
    layout (its rows, their order and depth, the page count) is the same it sends only
    the rows that changed, and the counts if they moved; otherwise the whole page. A
    message never holds more than a page of rows.
    """

    shown: ListPage | None = None

    @cached_property
    def heard(self) -> dict[tuple[str, str], Heard]:
        """What the page has heard of each of its sessions (its announcements)."""
        return {}

    def group_name(self) -> str:
        return SESSIONS_GROUP

    query: ListQuery
    """The list's query, read from the address as the page reads its own (Django's
    ``QueryDict``, within the same limits: ``DATA_UPLOAD_MAX_NUMBER_FIELDS``)."""

    def refusal(self) -> str | None:
        """The query, or why there is none: too many parameters, refused as the page
        answers the same address (400), with one line in the log and no traceback."""
        raw = self.scope.get("query_string", b"")
        try:
            self.query = list_query(QueryDict(raw.decode("utf-8", "replace")))
        except SuspiciousOperation as error:
            log.warning("socket %s refused (a bad request): %s", self.scope.get("path"), error)
            with translation.override(self.language):
                return translation.gettext(
                    "Bad request (400): the address has more than %(limit)s query parameters."
                ) % {"limit": settings.DATA_UPLOAD_MAX_NUMBER_FIELDS}
        return None

    def current_html(self) -> list[str]:
        self.shown = shown_homes().listing.page(self.query, get_config().rate_book)
        fragments.rows_news(self.heard, self.shown.rows)  # what the page shows: nothing to say
        return fragments.list_page_messages(self.shown)

    async def sessions_changed(self, event: dict[str, Any]) -> None:
        keys = {(str(home), str(session_id)) for home, session_id in event["ids"]}
        self.renders.ask(self.changed_html, (keys, event.get("versions") or {}), merged_changes)

    def changed_html(self, change: tuple[set[tuple[str, str]], dict[str, int]]) -> list[str]:
        """The page's rows among the ``change``'s sessions (their keys, and the versions of
        the homes that show them), or the whole page when its layout moved."""
        wanted, fresh = change
        page = shown_homes(fresh=fresh or None).listing.page(self.query, get_config().rate_book)
        before, self.shown = self.shown, page
        rows = [entry for entry in page.rows if entry.key in wanted]
        said = fragments.rows_news(self.heard, rows)
        if before is None or page.layout != before.layout:
            return [*fragments.list_page_messages(page), said]
        moved = page.counts != before.counts or page.matched != before.matched
        return [*fragments.list_update_messages(rows, page, moved), said]


class SessionConsumer(_PageConsumer):
    """One session's page (a session of one home): its fragments now, then each update."""

    def group_name(self) -> str:
        return session_group(self.home, self.session_id)

    @property
    def home(self) -> str:
        return str(self.scope["url_route"]["kwargs"]["home"])

    @property
    def session_id(self) -> str:
        return str(self.scope["url_route"]["kwargs"]["session_id"])

    shown_parts: tuple[str, ...] = ()
    """The parts the page holds: what this socket sent last, part by part."""
    heard: Heard | None = None
    """What the page has heard of the session's band and folds (its announcements)."""

    def current_html(self, version: int | None = None) -> str:
        """The parts that differ from what the page holds (all of them, the first time):
        a session's update is mostly its ring and figures, not its ledger and nodes."""
        view = shown_session(self.home, self.session_id, version)
        if view is None:
            self.shown_parts = ()
            return fragments.session_gone_html()
        parts = fragments.session_view_parts(self.home, view)
        before, self.shown_parts = self.shown_parts, parts
        self.heard, said = fragments.session_news(self.home, self.heard, view)
        if len(before) != len(parts):
            return "".join(parts) + said
        changed = (part for part, held in zip(parts, before, strict=True) if part != held)
        return "".join(changed) + said

    async def session_changed(self, event: dict[str, Any]) -> None:
        self.renders.ask(self.current_html, event.get("version"), newer_version)

    async def compact_changed(self, event: dict[str, Any]) -> None:
        # the request's new state, from whichever process changed it
        remember(self.home, self.session_id, event["request"])
        self.renders.ask(self.compact_html, None, newer_version)

    def compact_html(self, _: None = None) -> str:
        view = shown_homes().session(self.home, self.session_id)
        return fragments.compact_status_html(self.home, view.snapshot) if view is not None else ""


class UnknownPathConsumer(WebsocketConsumer):
    """Any other socket path: accepted, then closed with "not found" (a refused handshake
    would be retried as a network error, and no route at all is a traceback)."""

    def connect(self) -> None:
        self.accept()
        self.close(code=NOT_FOUND)
