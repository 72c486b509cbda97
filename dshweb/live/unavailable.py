"""A store cannot be reached (the database, or the channel layer's Redis): pages answer 503
"store unavailable", sockets close with 4503 "store unavailable"; never a 500 or a 1011
with a traceback per request.

Django turns an exception raised anywhere in a request (a middleware reading the session,
a context processor, a view) into its 500 handler, so :func:`server_error` is that handler
(``handler500`` in :mod:`dshweb.urls`): when the error is one that
:func:`~dshweb.live.outage.unreachable_store` calls an outage, it renders
``503.html`` in the site's layout, with ``Retry-After``, and logs one line; anything else
(a programming error) stays Django's 500, traceback logged. The page is rendered without
the request's context processors: they read the signed-in user and the collected home,
which live in the unreachable database. With ``DSHWEB_DEBUG=1`` Django shows its debug
page instead, as for any error.

:class:`StoreUnavailableSockets` does the same for WebSockets around the whole socket
stack (the login is read from the database before a consumer runs, and a consumer's
channel is read from the layer for as long as it lives); consumers catch a database
outage themselves (:mod:`dshweb.sessions.consumers`) to leave their group cleanly.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, ASGISendEvent, Scope
from django.http import HttpRequest, HttpResponse
from django.template import loader
from django.views import defaults

from dshweb.live.outage import outage_reason, unreachable_store

log = logging.getLogger(__name__)

STORE_UNAVAILABLE = 503
RETRY_AFTER = 10
"""Seconds a browser or client is told to wait before asking again."""
STORE_UNAVAILABLE_CLOSE = 4503
"""WebSocket close code "store unavailable" (503, as 4401 and 4404 mirror 401 and 404):
the page's script reconnects after a back-off. Not 1013 "try again later": Daphne sends
no close code but 1000 and 3000-4999."""


def say_unavailable(what: str, store: str, error: BaseException) -> None:
    """One line in the log: ``what`` failed because ``store`` cannot be reached."""
    log.warning("%s: %s is unavailable (%s)", what, store, outage_reason(error))


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 handler: a 503 page when a store cannot be reached."""
    error = sys.exc_info()[1]
    store = unreachable_store(error) if error is not None else None
    if error is None or store is None:
        return defaults.server_error(request)
    say_unavailable(f"{request.method} {request.path}", store, error)
    context = {"store": store, "retry_after": RETRY_AFTER}
    page = loader.render_to_string("503.html", context)
    response = HttpResponse(page, status=STORE_UNAVAILABLE)
    response["Retry-After"] = str(RETRY_AFTER)
    # Logged above, in one line: Django would log the traceback of every request again.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


class StoreUnavailableSockets:
    """ASGI middleware for sockets: one that fails because a store cannot be reached
    is closed with :data:`STORE_UNAVAILABLE_CLOSE` (accepted first, if it was not yet: a refused
    handshake reads as a network error)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        sent: set[str] = set()

        async def tracked(message: ASGISendEvent) -> None:
            sent.add(message["type"])
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as error:
            store = unreachable_store(error)
            if scope["type"] != "websocket" or store is None:
                raise
            say_unavailable(f"socket {scope.get('path', '')}", store, error)
            if "websocket.close" in sent:
                return
            if "websocket.accept" not in sent:
                await send({"type": "websocket.accept", "subprotocol": None, "headers": []})
            await send({"type": "websocket.close", "code": STORE_UNAVAILABLE_CLOSE, "reason": ""})
