"""WebSocket consumers: thin glue between a page and its Channels group.

On connect a consumer checks the login, joins its group and sends the current state of
its page; after that it forwards the fragments the watcher publishes. Sockets only
carry state to the browser: nothing is changed through them.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer, WebsocketConsumer

from dshweb.dashboard import fragments
from dshweb.dashboard.selectors import shared_home
from dshweb.live.groups import SESSIONS_GROUP, session_group, subscriptions
from dshweb.live.watcher import start_watcher

UNAUTHORIZED = 4401
NOT_FOUND = 4404


class _PageConsumer(AsyncWebsocketConsumer):
    group: str

    async def connect(self) -> None:
        start_watcher()
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            # Accept, then close with a code the page understands as "signed out" (a
            # refused handshake looks like a network error, retried for ever).
            await self.accept()
            await self.close(code=UNAUTHORIZED)
            return
        self.group = self.group_name()
        await self.channel_layer.group_add(self.group, self.channel_name)
        subscriptions.add(self.group)
        await self.accept()
        html = await sync_to_async(self.current_html, thread_sensitive=False)()
        await self.send(text_data=html)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            subscriptions.remove(self.group)
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def fragment_html(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["html"])

    def group_name(self) -> str:
        raise NotImplementedError

    def current_html(self) -> str:
        raise NotImplementedError


class SessionsConsumer(_PageConsumer):
    """The sessions list: every row now, then each changed row."""

    def group_name(self) -> str:
        return SESSIONS_GROUP

    def current_html(self) -> str:
        reading = shared_home.read()
        return fragments.rows_html(reading.entries())


class SessionConsumer(_PageConsumer):
    """One session's page: its fragments now, then each update."""

    def group_name(self) -> str:
        return session_group(self.session_id)

    @property
    def session_id(self) -> str:
        return str(self.scope["url_route"]["kwargs"]["session_id"])

    def current_html(self) -> str:
        reading = shared_home.read()
        snapshot = reading.session(self.session_id)
        if snapshot is None:
            return fragments.session_gone_html()
        return fragments.session_html(snapshot, reading.readings[self.session_id])


class UnknownPathConsumer(WebsocketConsumer):
    """Any other socket path: accepted, then closed with "not found" (a refused handshake
    would be retried as a network error, and no route at all is a traceback)."""

    def connect(self) -> None:
        self.accept()
        self.close(code=NOT_FOUND)
