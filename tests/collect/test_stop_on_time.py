"""``dshweb collect`` stops on time (dshweb.live.stopping), as a real process on a real copy
of a fixture home. When it starts, it closes the Compact request a collector that is gone
left running, and tries at once the delivery a killed process left claimed (not after
its claim). SIGTERM while its webhook receiver takes a request and never answers ends it
within 10 s, its lease released and the delivery left due (not counted as an attempt);
started again, with the receiver answering, it delivers it, once."""

from __future__ import annotations

import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dshweb.compaction.service import ABANDONED_MESSAGE
from dshweb.live import timing
from tests.alerts.test_hostile_receivers import _text
from tests.collect.test_collector import NAME, Collector, _cut, _env, bootstrap
from tests.compaction.test_compact import _dead_pid
from tests.conftest import FIXTURE_HOMES, run_python
from tests.support.alert_receivers import wait_for, wait_for_first_look, webhook_receiver
from tests.support.server import terminate
from tests.support.stores import query_rows

BOUND = 10.0
SECRET = "s" * 64
SETUP = f"""
from django.contrib.auth import get_user_model
from dshweb.alerts.models import AlertRule
from dshweb.compaction.models import CompactionRequest
user = get_user_model().objects.create_user("ops", password="pw-for-tests-only")
AlertRule.objects.create(owner=user, name="folds", condition="folded", cooldown_seconds=0,
    notify_browser=False, webhook_url=HOOK, webhook_secret={SECRET!r})
CompactionRequest.objects.create(home={NAME!r}, session_id="auto-compact", state="running",
    owner="collector/" + "0" * 24)  # a collector that is gone: no lease has this tag
# A delivery whose attempt a process killed since had claimed for a minute.
from datetime import timedelta
from django.utils import timezone
from dshweb.alerts.deliveries import record_firing
firing = record_firing(AlertRule.objects.get(), home={NAME!r}, session_id="earlier",
    title="", key="1", summary="folded")
firing.deliveries.update(claimed_by=DEAD, next_attempt_at=timezone.now() + timedelta(minutes=1))
"""


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    """A collector of a home of its own, with a data folder (and database) of its own."""
    bootstrap(tmp_path / "data")
    made = Collector(tmp_path / "home", tmp_path / "data")
    yield made
    terminate(made.process)


def _deliveries(collector: Collector) -> list[tuple[object, ...]]:
    sql = "SELECT firing_id, state, attempts, claimed_by FROM live_alertdelivery ORDER BY id"
    return query_rows(collector.data_dir, sql)


def _sigterm(collector: Collector) -> tuple[float, int]:
    """SIGTERM: the seconds until the process was gone, and its exit status."""
    process = collector.process
    assert process is not None
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    status = process.wait(BOUND + 5)
    return time.monotonic() - sent, status


def test_sigterm_with_a_webhook_hanging_exits_on_time_and_the_restart_delivers(
    collector: Collector,
) -> None:
    second, third = _cut(FIXTURE_HOMES / "auto-compact", collector.home)
    ((log, first), (_, rest)) = (*second.items(), *third.items())
    frames = [*first, *rest]
    to_fold = frames[: next(n for n, f in enumerate(frames) if b'"compaction/end"' in _text(f)) + 1]
    with webhook_receiver(lambda: SECRET) as hook:
        collector.extra_env = {"DSHWEB_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}
        dead = f"{socket.gethostname()}:{_dead_pid()}:gone"
        made = run_python(
            "manage.py",
            "shell",
            "-c",
            f"HOOK, DEAD = {hook.url!r}, {dead!r}\n{SETUP}",
            env=_env(collector.data_dir),
        )
        assert made.returncode == 0, made.stderr
        collector.start()
        # The delivery the killed process claimed is tried at once, not in a minute.
        wait_for(lambda: hook.received, 20)
        assert "1 delivery(ies) a stopped dshweb left claimed are due again" in collector.output()
        ((earlier, *_),) = _deliveries(collector)
        collector.wait_for("the rows", lambda: len(collector.rows()) == 1)
        wait_for_first_look(collector.output, rules=1)
        # What a collector that is gone left running is closed when this one starts.
        requests = "SELECT state, outcome, message FROM dashboard_compactionrequest"
        assert query_rows(collector.data_dir, requests) == [
            ("failed", "abandoned", ABANDONED_MESSAGE)
        ]
        hook.hanging = True
        for frame in to_fold:  # a fold, as DSH appends it: the rule fires, its webhook hangs
            with log.open("ab") as handle:
                handle.write(frame)
        wait_for(lambda: hook.held, 30)

        took, status = _sigterm(collector)
        said = collector.output()
        print(f"collector: SIGTERM with a webhook hanging: gone after {took:.2f} s")
        assert took < BOUND, said
        assert status == 0, said
        assert took > timing.STOP_GRACE - 0.5  # the attempt got the grace
        assert "stopping (SIGTERM): no new work; waiting up to 3 s for alert delivery" in said
        assert re.search(
            r"recorded as interrupted for the next start: alert delivery \d+ \(webhook\)\n",
            said,
        ), said
        assert "by a hard exit" not in said
        assert f"stopped; home {NAME} released" in said
        ((_, *told), (folded, *after)) = _deliveries(collector)
        assert (told, after) == (["sent", 1, ""], ["pending", 0, ""])

        hook.hanging = False
        collector.start()
        restarted = time.monotonic()
        wait_for(lambda: len(hook.received) == 2, 30)
        print(f"collector: delivered {time.monotonic() - restarted:.2f} s after the restart")
        ((held,), (at_start, arrived)) = hook.held, hook.received
        assert at_start.body["id"] == earlier
        assert arrived.body == held.body and arrived.body["id"] == folded  # once
        assert arrived.signature_ok
        collector.wait_for("the delivery sent", lambda: _deliveries(collector)[1][1] == "sent")
        assert _deliveries(collector) == [(earlier, "sent", 1, ""), (folded, "sent", 1, "")]

        took, status = _sigterm(collector)
        print(f"collector: SIGTERM with nothing in flight: gone after {took:.2f} s")
        assert status == 0 and took < timing.STOP_GRACE, collector.output()
