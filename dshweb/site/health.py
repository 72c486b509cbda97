"""``/healthz`` and ``/readyz``: whether the process answers, and whether it is ready, for
a supervisor, a proxy's health check or a monitor.

Both are answered here, in front of Django (:mod:`dshweb.asgi`), and whatever the jobs
at start wait on (:func:`~dshweb.live.startup.start_services`): no login, no session,
no cookie, no CSRF (``GET`` and ``HEAD`` only; anything else is 405), and none of the
middleware that would turn a probe away (the host check, the redirect to HTTPS behind a
TLS proxy: a proxy's probe comes over plain HTTP to ``127.0.0.1``). Nothing limits how
often they are asked; a burst of ``/readyz`` runs one check at a time, every caller
sharing its answer.

- ``/healthz``: ``200 ok`` whenever the server's loop answers (liveness).
- ``/readyz``: ``200 ready`` once :func:`dshweb.live.readiness.not_ready` holds (the
  home folded through, the database and Redis answering), else ``503 not ready: …`` with
  its reason on one line of plain English (for a machine or an operator's log, not
  translated).

Neither is cached (``Cache-Control: no-store``).
"""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async
from asgiref.typing import ASGI3Application, ASGIReceiveCallable, ASGISendCallable, Scope

from dshweb.live import readiness
from dshweb.live.startup import start_services

LIVENESS = "/healthz"
READINESS = "/readyz"
PATHS = (LIVENESS, READINESS)


class HealthChecks:
    """The ASGI application around dshweb's that answers :data:`PATHS` itself."""

    def __init__(self, app: ASGI3Application) -> None:
        self.app = app
        self._check: asyncio.Future[str | None] | None = None

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http" or scope["path"] not in PATHS:
            await self.app(scope, receive, send)
            return
        # Under a server that started nothing yet, a probe starts it all, never waiting.
        await start_services(by="the first call", wait=False)
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await _answer(send, 405, "only GET and HEAD\n", head=False, allow="GET, HEAD")
            return
        if scope["path"] == LIVENESS:
            status, text = 200, "ok\n"
        else:
            reason = await self._not_ready()
            status, text = (200, "ready\n") if reason is None else (503, f"not ready: {reason}\n")
        await _answer(send, status, text, head=method == "HEAD")

    async def _not_ready(self) -> str | None:
        """The readiness check in a thread; callers that come while one runs share it."""
        check = self._check
        if check is None or check.done() or check.get_loop() is not asyncio.get_running_loop():
            check = asyncio.ensure_future(
                sync_to_async(readiness.not_ready, thread_sensitive=False)()
            )
            self._check = check
        return await asyncio.shield(check)


async def _answer(
    send: ASGISendCallable, status: int, text: str, *, head: bool, allow: str = ""
) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    if allow:
        headers.append((b"allow", allow.encode()))
    await send(
        {"type": "http.response.start", "status": status, "headers": headers, "trailers": False}
    )
    await send({"type": "http.response.body", "body": b"" if head else body, "more_body": False})
