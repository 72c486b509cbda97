"""Which process runs a piece of work (a Compact request, an alert delivery's attempt):
``host:pid:token`` of a dshweb process, or a collector's tag
(:func:`~dshweb.collect.commands.collector_owner`); whether it is still alive, so what it
left in flight can be closed with a reason (a Compact request) or taken again (a
delivery's claim)."""

from __future__ import annotations

import os
import socket
import uuid

from dshweb.collect.commands import OWNER_PREFIX, collector_owner_alive

_PROCESS_TOKEN = uuid.uuid4().hex


def process_owner() -> str:
    """``host:pid:token`` of this process (the token tells a reused pid apart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_PROCESS_TOKEN}"


def owner_alive(owner: str) -> bool:
    if not owner:
        return False  # recorded before requests named their process
    if owner.startswith(OWNER_PREFIX):
        return collector_owner_alive(owner)
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    if host != socket.gethostname():
        return True  # another machine's process: nothing here can tell
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return token == _PROCESS_TOKEN
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, someone else's
    return True
