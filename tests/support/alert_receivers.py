"""Real receivers for alert deliveries on 127.0.0.1: a webhook server that checks each
request's signature, and an SMTP server (aiosmtpd) that keeps what it is sent; the
settings a server needs to reach them; a rule's form as the page posts it; and the wait
for a watcher's first look at new rules."""

from __future__ import annotations

import email
import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller

from dshweb.alerts.deliveries import SIGNATURE_HEADER

RULE_FORM = {
    "enabled": "on",
    "condition": "folded",
    "band": "tight",
    "steps": "3",
    "ratio": "0.5",
    "window": "10",
    "scope": "all",
    "cooldown_seconds": "0",
    "webhook_format": "json",
}
"""A rule that fires on every fold, as the new-rule form posts it (no way of telling)."""


def receivers_env(smtp_port: int) -> dict[str, str]:
    """A server's settings that let its alerts reach this machine's receivers."""
    return {
        "DSHWEB_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
        "DSHWEB_MAIL_ALLOWED_DOMAINS": "example.test",
        "DSHWEB_EMAIL_HOST": "127.0.0.1",
        "DSHWEB_EMAIL_PORT": str(smtp_port),
    }


@dataclass
class Received:
    body: dict[str, Any]
    signature_ok: bool
    signed_at: int


@dataclass
class WebhookReceiver:
    port: int = 0
    received: list[Received] = field(default_factory=list)
    hanging: bool = False
    """While set, a request is read, kept in :attr:`held` and never answered (until the
    receiver stops): a receiver that hangs."""
    held: list[Received] = field(default_factory=list)
    stopped: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


def signature_holds(secret: str, header: str, body: bytes) -> tuple[bool, int]:
    """Check ``X-Dshweb-Signature: t=…,v1=…`` as a receiver does: HMAC-SHA256 over
    ``"<t>." + body``, compared in constant time."""
    parts = dict(item.split("=", 1) for item in header.split(","))
    timestamp = int(parts["t"])
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest(expected.hexdigest(), parts["v1"]), timestamp


@contextmanager
def webhook_receiver(secret: Callable[[], str]) -> Iterator[WebhookReceiver]:
    """A webhook receiver; ``secret`` gives the rule's secret when a request comes."""
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            ok, signed_at = signature_holds(secret(), self.headers[SIGNATURE_HEADER], body)
            if receiver.hanging:
                receiver.held.append(Received(json.loads(body), ok, signed_at))
                receiver.stopped.wait()
                return
            receiver.received.append(Received(json.loads(body), ok, signed_at))
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.stopped.set()
        server.shutdown()
        server.server_close()


class _Mailbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.recipients: list[list[str]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(email.message_from_bytes(envelope.content))
        self.recipients.append(list(envelope.rcpt_tos))
        return "250 OK"


@contextmanager
def smtp_server() -> Iterator[tuple[_Mailbox, int]]:
    """A local SMTP server (aiosmtpd) and its port."""
    mailbox = _Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


def free_port() -> int:
    """A port nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(check: Callable[[], object], timeout: float = 15.0) -> Any:
    """Poll ``check`` until it returns something true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {check}")


def first_look_line(rules: int) -> str:
    """What the alert watcher logs once it has looked at every session under ``rules``
    rules: what its home held by then is old to them, what is appended next is new."""
    return f"rules in force: {rules} ("


def wait_for_first_look(output: Callable[[], str], rules: int, timeout: float = 60.0) -> None:
    """Until the alert watcher whose process prints ``output()`` has logged its
    :func:`first_look_line`."""
    said = first_look_line(rules)
    try:
        wait_for(lambda: said in output(), timeout)
    except AssertionError:
        raise AssertionError(f"the watcher never said {said!r}\n{output()[-4000:]}") from None
