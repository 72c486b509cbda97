"""Start the process's background services on the server's own event loop.

Daphne has no startup hook, so the first ASGI call of any kind starts the home watcher
(and, on the bundled demo home, its replay) and closes the Compact requests a stopped
dshweb left in flight, before passing the call on.
"""

from __future__ import annotations

from pathlib import Path

from asgiref.sync import sync_to_async
from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, Scope
from channels.routing import ProtocolTypeRouter
from django.conf import settings

from dshweb.dashboard.compact import close_abandoned_requests
from dshweb.live.demo import start_demo_replay
from dshweb.live.watcher import start_watcher


class StartLiveServices:
    def __init__(self, app: ProtocolTypeRouter) -> None:
        self.app = app
        self.swept = False

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] in ("http", "websocket"):
            start_watcher()
            if settings.DSH_HOME_IS_DEMO:
                start_demo_replay(Path(settings.DSH_HOME))
            if not self.swept:
                self.swept = True
                await sync_to_async(close_abandoned_requests)()
        await self.app(scope, receive, send)
