"""Start the process's background services on the server's own event loop.

Daphne has no startup hook, so the first ASGI call of any kind starts the home watcher
(and, on the bundled demo home, its replay) before passing the call on.
"""

from __future__ import annotations

from pathlib import Path

from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, Scope
from channels.routing import ProtocolTypeRouter
from django.conf import settings

from dshweb.live.demo import start_demo_replay
from dshweb.live.watcher import start_watcher


class StartLiveServices:
    def __init__(self, app: ProtocolTypeRouter) -> None:
        self.app = app

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] in ("http", "websocket"):
            start_watcher()
            if settings.DSH_HOME_IS_DEMO:
                start_demo_replay(Path(settings.DSH_HOME))
        await self.app(scope, receive, send)
