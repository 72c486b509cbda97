"""What a process starts with the server, in one list and in its order, on the server's
own event loop; and the one list of jobs that run beside a home's hub.

:func:`start_services` starts, in this order:

1. the hub of the process's own home, whose first round folds in its own thread while
   pages are served what is folded so far;
2. the hub's publisher (:mod:`dshweb.live.publisher`);
3. every job :func:`~dshweb.live.jobs.beside_hub` lists, in ``INSTALLED_APPS``' order
   (each app's ``ready()`` names its own: the alert watcher, the OpenTelemetry export);
4. on the bundled demo home, its replay;
5. the systemd notifier (:mod:`dshweb.live.systemd`), when systemd started the process:
   ``READY=1`` once :mod:`dshweb.live.readiness` holds, then the watchdog's pings;
6. once per process, the jobs :func:`~dshweb.live.jobs.at_start` lists (closing the
   Compact requests a stopped dshweb left in flight), in a thread, again while the
   database cannot be reached.

A web worker (``DSHWEB_COLLECT=off``) starts only 5: it has no hub, and the Compact
requests in flight are its collectors' business. A collector runs the same
:func:`~dshweb.live.jobs.jobs_beside_hub` beside its writer (:mod:`dshweb.collect.collector`).

They start when the server does: :func:`start_with_the_server` (called by
:mod:`dshweb.asgi` as Daphne imports it, in ``dshweb serve`` and in a plain ``daphne
dshweb.asgi:application`` alike) hands :func:`start_services` to Twisted's reactor, whose
asyncio loop is the one Daphne serves on, to run as soon as it runs: with no request
made, the home is folded and its alerts are sent. Under another ASGI server (no Twisted
reactor in the process), :class:`StartLiveServices` starts them with the first call of
any kind instead. Either way each call also starts again what a change of settings or a
new event loop (a test's) needs anew (1 to 4 keep what already runs).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sys
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from asgiref.typing import ASGI3Application, ASGIReceiveCallable, ASGISendCallable, Scope
from channels.layers import get_channel_layer

from dshweb.demo.home import start_demo_replay
from dshweb.live import readiness, timing
from dshweb.live.jobs import jobs_at_start, jobs_beside_hub
from dshweb.live.outage import database_unreachable
from dshweb.live.publisher import start_publisher
from dshweb.live.service import collecting, current_hub, own_home
from dshweb.live.systemd import ServiceNotifier

log = logging.getLogger(__name__)

_loop: asyncio.AbstractEventLoop | None = None
_started = False
"""The once-per-process steps (5 and 6) have started."""
_first_tries: concurrent.futures.Future[None] | None = None
"""Done once each :func:`at_start` job has been tried once."""
_background: set[asyncio.Task[None]] = set()
"""The tasks started here that run on (kept, so none is collected while it runs)."""


def server_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop the server runs on, once its services started (for /metrics, and
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


def start_beside_hub() -> None:
    """Steps 1 to 4 on the running loop (each kept if it runs already); a web worker
    starts none."""
    if not collecting():
        return
    current_hub()
    start_publisher()
    for task in jobs_beside_hub():
        task.start()
    if (home := own_home()).is_demo:
        start_demo_replay(home.path)


async def start_services(*, by: str = "the server's start", wait: bool = True) -> None:
    """Every step, in order, on the running loop (the once-per-process ones once);
    ``by``: what started them, for the log. Returns once the
    :func:`~dshweb.live.jobs.at_start` jobs have been tried once (a page is served after
    them: it shows the requests they closed), or at once (``wait`` false: a health probe,
    which must answer whatever they wait on)."""
    global _loop, _started, _first_tries
    _loop = asyncio.get_running_loop()
    start_beside_hub()
    if not _started:
        _started = True
        log.info("services started by %s", by)
        notifier = ServiceNotifier()
        if notifier.enabled:
            _keep(_loop.create_task(notify_systemd(notifier), name="dshweb-systemd"))
        if collecting() and (jobs := jobs_at_start()):
            _first_tries = concurrent.futures.Future()
            _keep(_loop.create_task(_run_at_start(jobs, _first_tries), name="dshweb-at-start"))
    tried = _first_tries
    if wait and tried is not None and not tried.done():
        await asyncio.wrap_future(tried)


def start_with_the_server() -> bool:
    """Have :func:`start_services` run as soon as Twisted's reactor runs, when Daphne has
    installed its asyncio reactor in this process; whether it has. The reactor is not
    imported here: importing it would install another one."""
    reactor = sys.modules.get("twisted.internet.reactor")
    loop = getattr(reactor, "_asyncioEventloop", None)
    if reactor is None or not isinstance(loop, asyncio.AbstractEventLoop):
        return False

    def start() -> None:
        # Called as the reactor starts, just before its loop runs: the loop takes it next.
        loop.call_soon_threadsafe(lambda: _keep(loop.create_task(start_services())))

    reactor.callWhenRunning(start)
    return True


class StartLiveServices:
    """The ASGI application around dshweb's: under a server that did not start the
    services (no Twisted reactor), the first call starts them; every call keeps steps 1
    to 4 running on its loop."""

    def __init__(self, app: ASGI3Application) -> None:
        self.app = app

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        global _loop
        _loop = asyncio.get_running_loop()
        if scope["type"] in ("http", "websocket"):
            await start_services(by="the first call")
        await self.app(scope, receive, send)


async def notify_systemd(notifier: ServiceNotifier) -> None:
    """Tell systemd what :class:`~dshweb.live.systemd.ServiceNotifier` says is due, from
    the server's loop: until the process is ready, what it waits for (a check of the
    stores in a thread, each :attr:`~ServiceNotifier.every`); then only the watchdog's
    pings, while the hub is at work."""
    check = sync_to_async(readiness.not_ready, thread_sensitive=False)
    while True:
        try:
            reason = None if notifier.ready else await check()
            notifier.tick(not_ready=reason, alive=readiness.alive(), starting=readiness.starting())
        except Exception:
            log.exception("systemd notifier: a round failed; trying again")
        await asyncio.sleep(notifier.every)


async def _run_at_start(
    jobs: dict[str, Callable[[], object]], tried: concurrent.futures.Future[None]
) -> None:
    """Each of ``jobs`` once, in a thread (``tried`` then done); a job that found the
    database out is run again, every :data:`~dshweb.live.timing.OUTAGE_RETRY_MAX` s,
    until it works."""
    waiting = dict(jobs)
    try:
        while waiting:
            for name, job in list(waiting.items()):
                try:
                    await sync_to_async(job)()
                except Exception as error:
                    if database_unreachable(error):
                        log.warning("at start: %s waits for the database (%s)", name, error)
                        continue
                    log.exception("at start: %s failed", name)
                del waiting[name]
            if not tried.done():
                tried.set_result(None)
            if waiting:
                await asyncio.sleep(timing.OUTAGE_RETRY_MAX)
    finally:
        if not tried.done():
            tried.set_result(None)


def _keep(task: asyncio.Task[None]) -> None:
    _background.add(task)
    task.add_done_callback(_background.discard)
