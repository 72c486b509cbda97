"""``dshweb serve`` stops on time (dshweb.live.stopping), on a real server on 127.0.0.1.

One server, started twice on the same data folder. The first time, a fold fires a rule
whose webhook receiver takes the request and never answers, and a Compact press waits for
a ``dsh web`` that accepts and never answers; SIGTERM: new connections are refused at once,
the process exits within 10 s, the delivery is left due (not counted as an attempt) and
the Compact request closed saying dshweb stopped while it ran. The second time the
receiver answers: the delivery arrives, once. Then a request thread hangs (Settings →
Engine → Test, on the same ``dsh web``, waits 10 s for its login): Ctrl-C (SIGINT) ends
the process in seconds all the same, by the hard exit.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import threading
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from dshweb.core.log.home import session_logs
from dshweb.live import timing
from tests.alerts.test_fair_delivery import blackhole
from tests.alerts.test_hostile_receivers import _text
from tests.conftest import FIXTURE_HOMES
from tests.sessions.test_hostile_clients import manage_shell
from tests.support.alert_receivers import wait_for, wait_for_first_look, webhook_receiver
from tests.support.logbuilder import frames_of
from tests.support.server import DshwebServer
from tests.support.stores import query_rows
from tests.support.visitor import Visitor

BOUND = 10.0
"""The issue's bound: from SIGTERM to the process gone."""
SECRET = "s" * 64
COMPACTED = "manual-compact"
RULE = f"""
from django.contrib.auth import get_user_model
from dshweb.alerts.models import AlertRule
AlertRule.objects.create(owner=get_user_model().objects.get(username="tester"), name="folds",
    condition="folded", cooldown_seconds=0, notify_browser=False, webhook_url=HOOK,
    webhook_secret={SECRET!r})
"""


def _home(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """auto-compact cut to its first frames, with manual-compact's session beside it (the
    Compact button's); the log and the frames up to its next fold's end."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    (log,) = session_logs(home)
    frames = frames_of(log.path)
    log.path.write_bytes(b"".join(frames[:3]))
    (compacted,) = session_logs(FIXTURE_HOMES / COMPACTED)
    folder = compacted.path.parent
    shutil.copytree(folder, home / "sessions" / folder.parent.name / folder.name)
    end = next(
        n for n, frame in enumerate(frames) if n >= 3 and b'"compaction/end"' in _text(frame)
    )
    return log.path, frames[3 : end + 1]


def _when(value: object) -> datetime:
    """A timestamp read from the database (SQLite's text in UTC, PostgreSQL's datetime)."""
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


def _deliveries(server: DshwebServer) -> list[tuple[object, ...]]:
    sql = (
        "SELECT id, firing_id, state, attempts, claimed_by, next_attempt_at, last_error"
        " FROM live_alertdelivery ORDER BY id"
    )
    return query_rows(server.data_dir, sql)


def _requests(server: DshwebServer) -> list[tuple[object, ...]]:
    sql = "SELECT state, outcome, message FROM dashboard_compactionrequest ORDER BY id"
    return query_rows(server.data_dir, sql)


def _stop(server: DshwebServer, signum: signal.Signals) -> tuple[float, float | None, int]:
    """Send ``signum``: the seconds until the process was gone, until a new connection
    was refused while it still ran (``None``: never), and its exit status."""
    process = server.process
    assert process is not None
    sent = time.monotonic()
    process.send_signal(signum)
    refused: float | None = None
    while process.poll() is None and time.monotonic() - sent < BOUND + 5:
        if refused is None:
            try:
                socket.create_connection(("127.0.0.1", server.port), timeout=0.5).close()
            except ConnectionRefusedError:
                if process.poll() is None:
                    refused = time.monotonic() - sent
        time.sleep(0.02)
    status = process.wait(5)
    server.process = None
    return time.monotonic() - sent, refused, status


def _test_the_engine(server: DshwebServer, visitor: Visitor) -> None:
    """Settings → Engine → Test (the request waits for the ``dsh web`` to answer)."""
    fields = {"mode": "url", "launch_url": "", "test": "1"}
    request = urllib.request.Request(
        server.url + "/settings/engine/",
        data=urllib.parse.urlencode(fields).encode(),
        headers={"X-CSRFToken": visitor.csrf_token()},
    )
    with contextlib.suppress(OSError):  # the server goes away while it waits
        visitor.opener.open(request, timeout=30).read()


def test_sigterm_exits_on_time_and_the_restart_picks_up_what_it_cut_short(
    tmp_path: Path,
) -> None:
    log, to_fold = _home(tmp_path)
    with webhook_receiver(lambda: SECRET) as hook, blackhole() as engine:
        hook.hanging = True
        server = DshwebServer(
            home=log.parents[3],
            data_dir=tmp_path / "data",
            extra_env={
                "DSHWEB_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
                "DSHWEB_ENGINE_URL": f"http://127.0.0.1:{engine.port}/?token=t",
            },
        )
        server.as_dshweb_serve()
        server.prepare()
        manage_shell(server.env(), f"HOOK = {hook.url!r}\n{RULE}")
        try:
            server.start()
            visitor = Visitor(server)  # a call starts the watcher (until it starts itself)
            wait_for_first_look(server.output, rules=1)
            # The session read before its fold comes: the fold is new to the rule.
            wait_for(lambda: visitor.get("/api/v1/homes/local/sessions/auto-compact")[0] == 200)
            status, _ = visitor.post(f"/homes/local/sessions/{COMPACTED}/compact/")
            assert status == 204
            wait_for(lambda: engine.came >= 1)  # the Compact request waits for dsh web
            for frame in to_fold:  # a fold: the rule fires, its webhook hangs
                with log.open("ab") as handle:
                    handle.write(frame)
            wait_for(lambda: hook.held)
            (delivery,) = _deliveries(server)
            assert delivery[2:5] == ("pending", 0, delivery[4]) and delivery[4]  # claimed

            took, refused, status = _stop(server, signal.SIGTERM)
            said = server.output()
            print(
                f"SIGTERM with a webhook and a Compact hanging: gone after {took:.2f} s,"
                f" new connections refused after {refused} s"
            )
            assert took < BOUND, said
            assert status == 0, said
            assert refused is not None and refused < 1.0, (refused, said)
            assert took > timing.STOP_GRACE - 0.5  # the grace was given to the work in flight
            assert "recorded as interrupted for the next start: Compact request 1, alert" in said
            assert "by a hard exit" not in said  # nothing else hung: it ended on its own
            # The delivery is due again at once, its claim let go, the attempt not counted.
            (after,) = _deliveries(server)
            assert after[2:5] == ("pending", 0, "")
            assert _when(after[5]) <= datetime.now(UTC)
            assert _requests(server) == [
                (
                    "failed",
                    "abandoned",
                    "dshweb stopped while this ran; the session log shows whether DSH folded it",
                )
            ]

            hook.hanging = False
            server.start()  # its probe is the call that starts the watcher
            restarted = time.monotonic()
            wait_for(lambda: hook.received)
            print(
                f"after the restart, the delivery arrived in {time.monotonic() - restarted:.2f} s"
            )
            (held,) = hook.held
            (arrived,) = hook.received
            assert arrived.body == held.body and arrived.signature_ok
            assert arrived.body["id"] == delivery[1]
            wait_for(lambda: _deliveries(server)[0][2] == "sent")
            assert _deliveries(server)[0][2:5] == ("sent", 1, "")
            visitor = Visitor(server)
            page = visitor.get(f"/homes/local/sessions/{COMPACTED}/")[1]
            assert 'data-state="failed"' in page and "dshweb stopped while this ran" in page

            # A request thread that hangs holds up no stop (Ctrl-C ends it alike).
            before = engine.came
            threading.Thread(target=_test_the_engine, args=(server, visitor), daemon=True).start()
            wait_for(lambda: engine.came > before)
            took, refused, status = _stop(server, signal.SIGINT)
            said = server.output()
            print(f"SIGINT with a request thread hanging: gone after {took:.2f} s")
            assert took < timing.STOP_EXIT_WAIT + timing.STOP_HANDLERS_WAIT + 2.0, said
            assert status == 0, said
            assert refused is not None, said
            assert "stopping (SIGINT): no new work; nothing in flight" in said
            assert "by a hard exit" in said
        finally:
            server.stop()
