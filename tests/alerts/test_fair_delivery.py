"""One user's slow receivers delay no other user's alerts, on a real ``dshweb serve``.

User ``ann`` has 20 webhook rules aimed at a receiver that takes the connection and never
answers; user ``bea`` has one webhook to a receiver that answers and one email to a real
SMTP server (aiosmtpd). One fold fires all 22 rules at once: bea's webhook and email
arrive within :data:`WITHIN` seconds of the fold's frame on disk, while ann's attempts
still go on (at most the per-target cap at once at her receiver, each recorded as a
timeout and tried again; none lost). Before the fair lanes, ann's 20 attempts held the
4 shared delivery threads and bea waited 20 s and more.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dshweb.live import timing
from tests.alerts.test_hostile_receivers import _text, tcp_server
from tests.sessions.test_hostile_clients import Served
from tests.support.alert_receivers import (
    receivers_env,
    smtp_server,
    wait_for_first_look,
    webhook_receiver,
)
from tests.support.stores import query_rows

SLOW_RULES = 20
WITHIN = 5.0
"""From the fold's frame on disk to bea's webhook and email: the watcher's look at the
change and one attempt each, on a loaded machine (measured: about 0.6 s)."""
GIVE_UP = 12.0
"""How long the test waits for bea's deliveries at most (before the fix they took
minutes: the test fails here, not after them)."""


@dataclass
class Blackhole:
    """A receiver that accepts every connection, reads what comes and never answers."""

    port: int = 0
    came_at: list[float] = field(default_factory=list)
    open_now: int = 0
    most_open: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def came(self) -> int:
        return len(self.came_at)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


@contextmanager
def blackhole() -> Iterator[Blackhole]:
    hole = Blackhole()

    def hold(conn: socket.socket, done: threading.Event) -> None:
        with hole.lock:
            hole.open_now += 1
            hole.most_open = max(hole.most_open, hole.open_now)
        try:
            with conn:
                conn.settimeout(0.2)
                while not done.is_set():
                    try:
                        if not conn.recv(65536):
                            break  # the attempt gave up and closed its end
                    except TimeoutError:
                        continue
                    except OSError:
                        break
        finally:
            with hole.lock:
                hole.open_now -= 1

    with tcp_server(hold) as (hole.port, hole.came_at):
        yield hole


def _rules(hole: Blackhole, hook_url: str) -> str:
    """``manage.py shell`` code: the two users and their rules (ann's first by name, so
    their deliveries are the older ones)."""
    lines = [
        "from django.contrib.auth import get_user_model",
        "from dshweb.alerts.models import AlertRule",
        "User = get_user_model()",
        "ann = User.objects.create_user('ann', 'ann@example.test', 'pw-for-tests-only')",
        "bea = User.objects.create_user('bea', 'bea@example.test', 'pw-for-tests-only')",
        "common = dict(condition='folded', cooldown_seconds=0, notify_browser=False,"
        " webhook_secret='s' * 64)",
    ]
    lines += [
        f"AlertRule.objects.create(owner=ann, name='a-slow-{n:02}', webhook_url={hole.url!r},"
        " **common)"
        for n in range(SLOW_RULES)
    ]
    lines += [
        f"AlertRule.objects.create(owner=bea, name='b-hook', webhook_url={hook_url!r}, **common)",
        "AlertRule.objects.create(owner=bea, name='b-mail', email_to='bea@example.test', **common)",
    ]
    return "\n".join(lines) + "\n"


def _until(check: Any, give_up: float) -> float | None:
    """Poll ``check`` until it holds: the time it did (monotonic), or None."""
    while time.monotonic() < give_up:
        if check():
            return time.monotonic()
        time.sleep(0.02)
    return None


def _ann_deliveries(served: Served) -> list[tuple[Any, ...]]:
    sql = (
        "SELECT d.state, d.attempts, d.last_error, d.next_attempt_at FROM live_alertdelivery d"
        " JOIN live_alertfiring f ON d.firing_id = f.id JOIN live_alertrule r ON f.rule_id = r.id"
        " WHERE r.name LIKE 'a-slow-%' ORDER BY d.id"
    )
    return query_rows(served.server.data_dir, sql)


@pytest.mark.timing
def test_another_users_slow_receivers_delay_neither_webhook_nor_email(tmp_path: Path) -> None:
    with (
        blackhole() as hole,
        webhook_receiver(lambda: "s" * 64) as hook,
        smtp_server() as (mailbox, smtp_port),
    ):
        served = Served(
            tmp_path,
            extra_env=receivers_env(smtp_port),
        )
        served.server.as_dshweb_serve()
        served.start()
        try:
            served.shell(_rules(hole, hook.url))
            assert served.visitor is not None
            served.visitor.get("/")
            wait_for_first_look(served.server.output, rules=SLOW_RULES + 2)
            first_compaction = next(
                n for n, piece in enumerate(served.rest) if b'"compaction/end"' in _text(piece)
            )
            appended = time.monotonic()
            for piece in served.rest[: first_compaction + 1]:
                with served.log.open("ab") as handle:
                    handle.write(piece)
            give_up = appended + GIVE_UP
            hooked = _until(lambda: hook.received, give_up)
            mailed = _until(lambda: mailbox.messages, give_up)
            figures = (
                f"bea's webhook after {'-' if hooked is None else f'{hooked - appended:.2f}'} s,"
                f" email after {'-' if mailed is None else f'{mailed - appended:.2f}'} s;"
                f" ann's receiver took {hole.came} connections"
            )
            print(figures)
            assert hooked is not None and mailed is not None, (
                figures + "\n" + served.server.output(40)
            )
            assert hooked - appended < WITHIN and mailed - appended < WITHIN, figures
            assert [r.body["rule"]["name"] for r in hook.received] == ["b-hook"]
            assert hook.received[0].signature_ok
            assert mailbox.recipients == [["bea@example.test"]]
            # ann's attempts go on beside: her receiver got connections, never more at once
            # than one target may hold, and the first of them are recorded as timeouts.
            ended = appended + GIVE_UP + timing.ALERT_TIMEOUT
            assert _until(lambda: hole.came >= timing.WEBHOOK_SLOTS_PER_TARGET, ended), hole
            timed_out = _until(
                lambda: any(
                    row[2] == "could not deliver (timeout)" for row in _ann_deliveries(served)
                ),
                ended,
            )
            assert timed_out is not None, _ann_deliveries(served)
            rows = _ann_deliveries(served)
            # It stops while attempts of ann's hang on her receiver.
            assert _until(lambda: hole.open_now >= 1, time.monotonic() + timing.ALERT_TIMEOUT)
        finally:
            stopped_in = served.server.stop()
    print(f"stopped in {stopped_in:.2f} s with ann's attempts under way")
    # A stop waits for the attempts under way for its grace only, then records them as
    # interrupted: every claim let go, for the next start.
    assert stopped_in < timing.STOP_GRACE + timing.STOP_EXIT_WAIT
    claims = "SELECT claimed_by FROM live_alertdelivery WHERE claimed_by != ''"
    assert query_rows(served.server.data_dir, claims) == []
    assert hole.most_open <= timing.WEBHOOK_SLOTS_PER_TARGET, hole
    # One fold: one delivery per rule of ann's, every one still pending (waiting its turn,
    # or tried and to be tried again): none lost, none given up on.
    assert len(rows) == SLOW_RULES, rows
    assert all(state == "pending" and due is not None for state, _, _, due in rows), rows
    tried = [row for row in rows if row[1] > 0]
    assert tried and all(row[2] == "could not deliver (timeout)" for row in tried), rows
    # A delivery that waited for its turn is not counted as a failed attempt.
    assert all(row[2] == "" for row in rows if row[1] == 0), rows
