"""Start the process's background services on the server's own event loop, and the one
list of jobs that run beside a home's hub.

Daphne has no startup hook, so the first ASGI call of any kind starts the hub's
publisher and every job :func:`beside_hub` lists (each app's ``ready()`` adds its own:
the alert watcher), on the bundled demo home its replay, and once the jobs
:func:`on_first_call` lists (closing the Compact requests a stopped dshweb left in
flight), before passing the call on. The publisher starts the process's hub, whose first
round folds in its own thread while pages are served with what is folded so far. A
collector runs the same :func:`jobs_beside_hub` beside its writer
(:mod:`dshweb.collect.collector`). A web worker (``DSHWEB_COLLECT=off``) starts none of
these: it has no hub, and the Compact requests in flight are its collectors' business.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, Scope
from channels.layers import get_channel_layer
from channels.routing import ProtocolTypeRouter

from dshweb.demo.home import start_demo_replay
from dshweb.live.hubtask import HubTask
from dshweb.live.publisher import start_publisher
from dshweb.live.service import collecting, own_home

_loop: asyncio.AbstractEventLoop | None = None
_beside: dict[str, HubTask[Any]] = {}
_on_first_call: dict[str, Callable[[], object]] = {}


def beside_hub(task: HubTask[Any]) -> None:
    """Run ``task``'s job beside every home's hub: the process's own, and a collector's
    (kept by name: an app made ready twice adds it once)."""
    _beside[task.name] = task


def jobs_beside_hub() -> tuple[HubTask[Any], ...]:
    return tuple(_beside.values())


def on_first_call(job: Callable[[], object]) -> None:
    """Run ``job`` (blocking; in a thread) once, when a process that reads its home
    serves its first call."""
    _on_first_call[f"{job.__module__}.{job.__qualname__}"] = job


def jobs_on_first_call() -> tuple[Callable[[], object], ...]:
    """What :func:`on_first_call` lists (a collector runs them when it starts)."""
    return tuple(_on_first_call.values())


def server_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop the server runs on, once it has served a call (for /metrics, and
    :func:`send_to_group`)."""
    return _loop


def send_to_group(group: str, message: dict[str, Any]) -> None:
    """Send ``message`` to ``group`` on the channel layer from synchronous code (a
    request's thread, a worker thread): on the server's loop while it runs, where the
    in-memory layer's queues are (a send through a loop of the thread's own would wake no
    socket until something else did); else, in a process that serves nothing (a
    collector), through a loop of its own. Without a channel layer, nothing is sent."""
    layer = get_channel_layer()
    if layer is None:
        return
    loop = _loop
    if loop is not None and loop.is_running():
        asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
    else:
        async_to_sync(layer.group_send)(group, message)


class StartLiveServices:
    def __init__(self, app: ProtocolTypeRouter) -> None:
        self.app = app
        self.swept = False

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        global _loop
        _loop = asyncio.get_running_loop()
        if scope["type"] in ("http", "websocket") and collecting():
            start_publisher()
            for task in jobs_beside_hub():
                task.start()
            if (home := own_home()).is_demo:
                start_demo_replay(home.path)
            if not self.swept:
                self.swept = True
                for job in _on_first_call.values():
                    await sync_to_async(job)()
        await self.app(scope, receive, send)
