"""What a stop leaves of an alert delivery, and how the next start picks it up: an
attempt cut short is due again at once and not counted; a claim whose process is gone
is let go when a watcher starts, one of a live process (or of another machine) is not;
no attempt starts once the stop is asked. A real server and collector stopped with a
webhook hanging: tests/site/test_stop_on_time.py, tests/collect/test_stop_on_time.py."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, cast

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.utils import timezone

from dshweb.alerts import deliveries
from dshweb.alerts.models import AlertDelivery
from dshweb.alerts.watcher import AlertWatcher
from dshweb.collect.owners import process_owner
from dshweb.live import stopping
from dshweb.live.hub import ChangeSource
from tests.alerts.test_alerts_end_to_end import make_rule

pytestmark = [pytest.mark.django_db]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _claimed(rule: Any, key: str, owner: str, *, home: str = "local") -> AlertDelivery:
    """A webhook delivery claimed by ``owner``: its next attempt a claim's length ahead."""
    firing = deliveries.record_firing(
        rule, home=home, session_id=f"s-{key}", title="", key=key, summary="folded"
    )
    (delivery,) = firing.deliveries.all()
    AlertDelivery.objects.filter(pk=delivery.pk).update(
        claimed_by=owner, next_attempt_at=timezone.now() + timedelta(seconds=60)
    )
    delivery.refresh_from_db()
    return delivery


@pytest.fixture
def rule() -> Any:
    owner = get_user_model().objects.create_user("ann", password="pw-for-tests-only")
    return make_rule(owner, notify_browser=False, webhook_url="http://127.0.0.1:9/hook")


def test_claims_of_processes_that_are_gone_are_let_go_and_others_kept(rule: Any) -> None:
    host, pid, _ = process_owner().split(":")
    dead = _claimed(rule, "1", f"{host}:{_dead_pid()}:gone")
    earlier = _claimed(rule, "2", f"{host}:{pid}:an-earlier-process-with-this-pid")
    mine = _claimed(rule, "3", process_owner())
    elsewhere = _claimed(rule, "4", "another-machine:1:token")
    other_home = _claimed(rule, "5", f"{host}:{_dead_pid()}:gone", home="other")
    assert deliveries.due_deliveries("local")[0] == []  # every one waits out its claim

    assert deliveries.release_dead_claims("local") == 2
    due = {item.delivery_id for item in deliveries.due_deliveries("local")[0]}
    assert due == {dead.pk, earlier.pk}
    for kept in (mine, elsewhere, other_home):
        before = kept.next_attempt_at, kept.claimed_by
        kept.refresh_from_db()
        assert (kept.next_attempt_at, kept.claimed_by) == before
    for released in (dead, earlier):
        released.refresh_from_db()
        assert (released.claimed_by, released.attempts, released.state) == ("", 0, "pending")
    assert deliveries.release_dead_claims("local") == 0  # nothing left to let go


def test_an_attempt_a_stop_cut_short_is_due_at_once_and_not_counted(rule: Any) -> None:
    firing = deliveries.record_firing(
        rule, home="local", session_id="s", title="", key="1", summary="folded"
    )
    (delivery,) = firing.deliveries.all()
    delivery.attempts, delivery.last_error = 2, "could not deliver (timeout)"
    delivery.save()
    assert deliveries._claimed(delivery)  # as an attempt claims it
    delivery.refresh_from_db()
    assert delivery.claimed_by == process_owner()
    assert delivery.next_attempt_at is not None and delivery.next_attempt_at > timezone.now()

    assert deliveries.record_interrupted(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.claimed_by == "" and delivery.next_attempt_at <= timezone.now()
    assert (delivery.state, delivery.attempts) == ("pending", 2)
    assert delivery.last_error == "could not deliver (timeout)"  # the last real attempt's
    assert [d.delivery_id for d in deliveries.due_deliveries("local")[0]] == [delivery.pk]

    # The attempt then fails, as a connection the stop shut does: not counted either.
    claimed = AlertDelivery.objects.get(pk=delivery.pk)
    claimed.claimed_by = process_owner()  # what the attempt still holds in memory
    deliveries.record_failure(claimed, "could not deliver (connection closed)")
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.claimed_by) == ("pending", 2, "")
    assert delivery.last_error == "could not deliver (timeout)"
    assert delivery.next_attempt_at <= timezone.now()
    # While it holds its claim, a failure counts and waits out its back-off.
    assert deliveries._claimed(delivery)
    deliveries.record_failure(delivery, "could not deliver (refused)")
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.last_error) == (3, "could not deliver (refused)")
    assert delivery.claimed_by == "" and delivery.next_attempt_at > timezone.now()


def test_an_attempt_that_ended_or_another_process_claimed_is_left_alone(rule: Any) -> None:
    firing = deliveries.record_firing(
        rule, home="local", session_id="s", title="", key="1", summary="folded"
    )
    (sent,) = firing.deliveries.all()
    assert deliveries._claimed(sent)
    deliveries.record_sent(sent)  # the attempt ended just before the grace did
    assert not deliveries.record_interrupted(sent.pk)
    sent.refresh_from_db()
    assert (sent.state, sent.attempts, sent.claimed_by) == ("sent", 1, "")
    theirs = _claimed(rule, "2", "another-machine:1:token")
    assert not deliveries.record_interrupted(theirs.pk)
    theirs.refresh_from_db()
    assert theirs.claimed_by == "another-machine:1:token"


@pytest.fixture
def stopped(monkeypatch: pytest.MonkeyPatch) -> Iterator[stopping.Stopping]:
    """This process asked to stop (a stop of the test's own, which ends nothing)."""
    made = stopping.Stopping(deadline=3600, exit_wait=3600, hard_exit=lambda: None)
    monkeypatch.setattr(stopping, "stopping", made)
    made.ask("SIGTERM")
    yield made


def test_no_attempt_starts_once_the_stop_is_asked(rule: Any, stopped: stopping.Stopping) -> None:
    firing = deliveries.record_firing(
        rule, home="local", session_id="s", title="", key="1", summary="folded"
    )
    (delivery,) = firing.deliveries.all()
    assert deliveries.attempt(delivery.pk) is None
    delivery.refresh_from_db()
    # Not claimed, not tried (its receiver, port 9, would have been a failed attempt).
    assert (delivery.state, delivery.attempts, delivery.claimed_by) == ("pending", 0, "")
    assert [d.delivery_id for d in deliveries.due_deliveries("local")[0]] == [delivery.pk]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_stopping_watcher_leaves_what_is_due_for_the_next_start(
    rule: Any, stopped: stopping.Stopping
) -> None:
    firing = await sync_to_async(deliveries.record_firing)(
        rule, home="local", session_id="s", title="", key="1", summary="folded"
    )
    watcher = AlertWatcher(cast(ChangeSource, None), "local")
    assert await watcher._deliver() is None
    assert watcher._attempting == {}
    states = await sync_to_async(
        lambda: list(firing.deliveries.values_list("attempts", "claimed_by"))
    )()
    assert states == [(0, "")]
