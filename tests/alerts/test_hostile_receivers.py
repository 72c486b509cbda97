"""Alert receivers that break, trickle or point inside the network cost only their own
delivery, on a real server (Daphne in a child process): a canary webhook still gets
each fold at once beside them; and a webhook is never a way into the network."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.alerts.models import AlertRule
from dshweb.alerts.webhooks import TargetRefused, webhook_target
from tests.sessions.test_hostile_clients import Served
from tests.support.alert_receivers import RULE_FORM, receivers_env, smtp_server, wait_for_first_look
from tests.support.stores import query_rows

CANARY_WITHIN = 3.0
"""From the fold's frame on disk to the canary's request: the watcher's reading of the
change and one attempt, on a loaded machine."""


@contextmanager
def tcp_server(answer: Any) -> Iterator[tuple[int, list[float]]]:
    """A server on 127.0.0.1 running ``answer(connection)`` for each connection; its
    port and the times connections came."""
    listener = socket.create_server(("127.0.0.1", 0))
    came: list[float] = []
    done = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            came.append(time.monotonic())
            threading.Thread(target=answer, args=(conn, done), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1], came
    finally:
        done.set()
        listener.close()


def _read_request(conn: socket.socket) -> None:
    conn.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return
        data += piece


def not_http(conn: socket.socket, done: threading.Event) -> None:
    with conn:
        _read_request(conn)
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\nthis is not HTTP\r\n\r\n")


def trickle(conn: socket.socket, done: threading.Event) -> None:
    """An HTTP answer a byte every 2 s: no read ever waits 5 s, the answer never ends."""
    with conn:
        _read_request(conn)
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100:
            if done.wait(2.0):
                return
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                return


@contextmanager
def canary() -> Iterator[tuple[int, list[float]]]:
    came: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            came.append(time.monotonic())
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], came
    finally:
        server.shutdown()
        server.server_close()


def _rule(name: str, **fields: object) -> str:
    values = {"condition": "folded", "cooldown_seconds": 0, "notify_browser": False} | fields
    args = ", ".join(f"{k}={v!r}" for k, v in values.items())
    return (
        f"AlertRule.objects.create(owner=User.objects.get(username='tester'), name={name!r},"
        f" webhook_secret='s' * 64, {args})\n"
    )


@pytest.mark.timing
def test_a_canary_webhook_delivers_beside_broken_and_trickling_receivers(
    tmp_path: Path,
) -> None:
    with (
        canary() as (canary_port, canary_came),
        tcp_server(not_http) as (broken_port, broken_came),
        tcp_server(trickle) as (slow_port, slow_came),
        smtp_server() as (mailbox, smtp_port),
    ):
        served = Served(
            tmp_path,
            extra_env=receivers_env(smtp_port),
        )
        served.start()
        try:
            served.shell(
                "from django.contrib.auth import get_user_model as g\n"
                "from dshweb.alerts.models import AlertRule\nUser = g()\n"
                + _rule("slow", webhook_url=f"http://127.0.0.1:{slow_port}/hook")
                + _rule("broken", webhook_url=f"http://127.0.0.1:{broken_port}/hook")
                + _rule("mail\r\nBcc: victim@example.test", email_to="ops@example.test")
                + _rule("canary", webhook_url=f"http://127.0.0.1:{canary_port}/hook")
            )
            assert served.visitor is not None
            served.visitor.get("/")
            wait_for_first_look(served.server.output, rules=4)
            first_compaction = next(
                n for n, piece in enumerate(served.rest) if b'"compaction/end"' in _text(piece)
            )
            appended = time.monotonic()
            for piece in served.rest[: first_compaction + 1]:
                with served.log.open("ab") as handle:
                    handle.write(piece)
            deadline = appended + 20
            while not canary_came and time.monotonic() < deadline:
                time.sleep(0.02)
            assert canary_came, served.server.output(60)
            took = canary_came[0] - appended
            while not slow_came and time.monotonic() < deadline:  # its thread may start later
                time.sleep(0.02)
            # The canary did not wait for the trickling receiver's attempt (5 s) to end.
            assert slow_came and canary_came[0] < slow_came[0] + 4, (slow_came, canary_came)
            assert took < CANARY_WITHIN, f"the canary waited {took:.2f} s"
            _deliveries(served, wait_for=("slow", "broken", "mail\r\nBcc:"))
        finally:
            served.server.stop()
    # Read once nothing is tried any more (a failed delivery is tried again 5 s later).
    found = _deliveries(served, wait_for=())
    # One fold, one firing and one delivery per rule.
    assert sorted(found) == sorted(["slow", "broken", "canary", "mail\r\nBcc: victim@example.test"])
    assert all(len(rows) == 1 for rows in found.values()), found
    states = {name: rows[0] for name, rows in found.items()}
    # Each failed, recorded as its own, and is tried again later.
    assert states["slow"][0] == "pending" and states["slow"][1] >= 1
    assert states["slow"][2] == "could not deliver (timeout)"
    assert states["broken"][0] == "pending" and states["broken"][1] >= 1
    assert states["broken"][2] == "could not deliver (no HTTP answer)"
    assert states["canary"] == ("sent", 1, "")
    assert states["mail\r\nBcc: victim@example.test"] == ("sent", 1, "")
    (message,) = mailbox.messages
    assert "\n" not in message["Subject"] and "Bcc" not in message
    assert mailbox.recipients == [["ops@example.test"]]
    # Every attempt recorded, but one the stop may have cut short.
    assert states["broken"][1] in (len(broken_came), len(broken_came) - 1), broken_came


def _text(frame: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdDecompressor().decompressobj().decompress(frame)


def _deliveries(served: Served, wait_for: tuple[str, ...]) -> dict[str, list[tuple[Any, ...]]]:
    """Each rule's deliveries as (state, attempts, last error), once the ``wait_for``
    rules' first attempts are recorded."""
    sql = (
        "SELECT r.name, d.state, d.attempts, d.last_error FROM live_alertdelivery d"
        " JOIN live_alertfiring f ON d.firing_id = f.id JOIN live_alertrule r ON f.rule_id = r.id"
        " ORDER BY d.id"
    )
    deadline = time.monotonic() + 20
    while True:
        found: dict[str, list[tuple[Any, ...]]] = {}
        for name, *state in query_rows(served.server.data_dir, sql):
            found.setdefault(str(name), []).append(tuple(state))
        ready = all(
            any(k.startswith(w) and rows[0][1] for k, rows in found.items()) for w in wait_for
        )
        if ready or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


# -- a webhook is never a way into the network ----------------------------------------------

INTERNAL = [
    "http://127.0.0.1:8000/",
    "http://localhost:6379/",
    "http://127.1/",
    "http://2130706433/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://0.0.0.0/",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "https://[fd12:3456::1]:8443/x",
]


@pytest.mark.parametrize("url", INTERNAL)
def test_every_internal_target_is_refused(url: str) -> None:
    with pytest.raises(TargetRefused, match="internal address"):
        webhook_target(url, frozenset())


def test_a_public_target_and_a_named_allowed_host_are_taken() -> None:
    public = webhook_target("https://93.184.216.34:8443/hook?x=1", frozenset())
    assert (public.host, public.port, public.path) == ("93.184.216.34", 8443, "/hook?x=1")
    allowed = webhook_target("http://[::1]:9/", frozenset({"::1"}))
    assert allowed.addresses == ("::1",)


@pytest.mark.django_db
def test_a_user_cannot_save_an_internal_webhook_or_mail_anyone(settings: Any) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "MAIL_ALLOWED_DOMAINS": ("example.test",)}
    user = get_user_model().objects.create_user("ann", "ann@home.test", "pw-for-tests-only")
    client = Client()
    client.force_login(user)
    base = RULE_FORM | {"name": "r"}
    for url in INTERNAL:
        page = client.post("/alerts/new/", base | {"webhook_url": url}).content.decode()
        assert "is an internal address" in page, url
    refused = client.post("/alerts/new/", base | {"email_to": "boss@elsewhere.test"})
    assert b"Your own address" in refused.content
    assert not AlertRule.objects.exists()
    for address in ("ann@home.test", "team@example.test"):
        assert client.post("/alerts/new/", base | {"email_to": address}).status_code == 302
    assert AlertRule.objects.count() == 2


def test_a_redirect_is_not_followed(tmp_path: Path) -> None:
    """The allowed receiver answers 302 to another port of the machine: the delivery
    fails, and the other port gets nothing."""
    from dshweb.alerts.webhooks import PostFailed, post

    with canary() as (other_port, other_came):

        class Redirect(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{other_port}/")
                self.send_header("Content-Length", "0")
                self.end_headers()

        server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            target = webhook_target(
                f"http://127.0.0.1:{server.server_address[1]}/", frozenset({"127.0.0.1"})
            )
            with pytest.raises(PostFailed, match=r"HTTP 3xx: redirects are not followed"):
                post(target, b"{}", {"Content-Type": "application/json"}, timeout=5)
        finally:
            server.shutdown()
            server.server_close()
        time.sleep(0.3)
    assert other_came == []
