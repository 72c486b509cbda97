"""A send from synchronous code (dshweb.live.startup.send_to_group): from a thread of its
own, it reaches a socket waiting on the server's loop in this process (the in-memory
layer's queues are that loop's), with no socket having lent its loop first."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, cast

import pytest
from asgiref.typing import ASGIReceiveCallable, ASGISendCallable, Scope
from channels.layers import get_channel_layer
from channels.routing import ProtocolTypeRouter

from dshweb.live.startup import StartLiveServices, send_to_group, server_loop


async def _nothing(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    return None


async def _serve_one_call() -> None:
    """What the server does with any call: the loop it serves on is the server's."""
    receive = cast(ASGIReceiveCallable, None)
    send = cast(ASGISendCallable, None)
    await StartLiveServices(cast(ProtocolTypeRouter, _nothing))(
        cast(Scope, {"type": "lifespan"}), receive, send
    )


@pytest.mark.asyncio
async def test_a_send_from_a_worker_thread_wakes_a_socket_on_the_servers_loop() -> None:
    layer: Any = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("dshweb.test-send", channel)
    await _serve_one_call()
    loop = asyncio.get_running_loop()
    assert server_loop() is loop
    receiving = asyncio.ensure_future(layer.receive(channel))
    await asyncio.sleep(0.01)  # the socket waits for its next message
    worker = threading.Thread(
        target=send_to_group, args=("dshweb.test-send", {"type": "compact.changed"})
    )
    worker.start()
    # Nothing else wakes the loop: a send through a loop of the thread's own would be seen
    # only when the wait times out.
    started = loop.time()
    assert await asyncio.wait_for(receiving, timeout=2) == {"type": "compact.changed"}
    assert loop.time() - started < 1
    worker.join()
    await layer.group_discard("dshweb.test-send", channel)
