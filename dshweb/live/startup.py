"""Start the process's background services on the server's own event loop.

Daphne has no startup hook, so the first ASGI call of any kind starts the hub's
publisher and its alert watcher (and, on the bundled demo home, its replay) and runs the
one-off ``on_start`` jobs the web layer hands in (closing the Compact requests a stopped
dshweb left in flight), before passing the call on. The publisher starts the process's
hub, whose first pass folds in its own thread while pages are served with what is folded
so far. A web worker (``DSHWEB_COLLECT=off``) starts none of these: it has no hub, and
the Compact requests in flight are its collectors' business.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from asgiref.sync import sync_to_async
from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, Scope
from channels.routing import ProtocolTypeRouter

from dshweb.live.alerts import start_alert_watcher
from dshweb.live.demo import start_demo_replay
from dshweb.live.publisher import start_publisher
from dshweb.live.service import collecting, shown_home

_loop: asyncio.AbstractEventLoop | None = None


def server_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop the server runs on, once it has served a call (for /metrics)."""
    return _loop


class StartLiveServices:
    def __init__(
        self, app: ProtocolTypeRouter, on_start: Sequence[Callable[[], object]] = ()
    ) -> None:
        self.app = app
        self.on_start = on_start
        self.swept = False

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        global _loop
        _loop = asyncio.get_running_loop()
        if scope["type"] in ("http", "websocket") and collecting():
            start_publisher()
            start_alert_watcher()
            if (home := shown_home()).is_demo:
                start_demo_replay(home.path)
            if not self.swept:
                self.swept = True
                for job in self.on_start:
                    await sync_to_async(job)()
        await self.app(scope, receive, send)
