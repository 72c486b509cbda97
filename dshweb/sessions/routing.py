"""WebSocket URLs: ``/ws/sessions/`` for the list, ``/ws/homes/<home>/sessions/<id>/`` for
a session; any other path is closed with 4404."""

from __future__ import annotations

from typing import Any

from django.urls import path, re_path

from dshweb.sessions.consumers import SessionConsumer, SessionsConsumer, UnknownPathConsumer

# django-stubs types path() for views only; Channels routes consumers with it too.
websocket_urlpatterns: list[Any] = [
    path("ws/sessions/", SessionsConsumer.as_asgi()),  # type: ignore[arg-type]
    path(
        "ws/homes/<home:home>/sessions/<path:session_id>/",
        SessionConsumer.as_asgi(),  # type: ignore[arg-type]
    ),
    re_path(r"", UnknownPathConsumer.as_asgi()),  # type: ignore[arg-type]
]
