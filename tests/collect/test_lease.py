"""The collector lease (dshweb.collect.lease): one live collector per home name and per home
folder (a path on one machine)."""

from __future__ import annotations

import logging
import os
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from dshweb.collect.lease import (
    LeaseLost,
    LeaseRefused,
    lease_release,
    lease_renew,
    lease_take,
)
from dshweb.collect.models import CollectedSession, CollectorLease

pytestmark = [pytest.mark.django_db(transaction=True)]


def _age(name: str, seconds: float) -> None:
    past = timezone.now() - timedelta(seconds=seconds)
    CollectorLease.objects.filter(name=name).update(heartbeat_at=past)


def test_a_held_name_or_path_is_refused_with_who_holds_it() -> None:
    lease_take(name="a", path="/h/a", heartbeat_every=2.0)
    for name, path in [("a", "/h/a"), ("a", "/h/other"), ("b", "/h/a")]:
        with pytest.raises(LeaseRefused) as refused:
            lease_take(name=name, path=path, heartbeat_every=2.0)
        assert re.fullmatch(
            rf"home a \(/h/a\) is collected by .+:{os.getpid()} since "
            r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, last seen 0 s ago",
            str(refused.value),
        )
    lease_take(name="b", path="/h/b", heartbeat_every=2.0)  # another home is free


def test_a_stale_lease_is_taken_over_logged_and_its_holder_loses_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = lease_take(name="a", path="/h/a", heartbeat_every=10.0)
    CollectorLease.objects.filter(name="a").update(version=7)
    _age("a", 25)  # within 3 beats of 10 s: still held
    with pytest.raises(LeaseRefused, match="last seen 25 s ago"):
        lease_take(name="a", path="/h/a", heartbeat_every=1.0)
    _age("a", 31)
    with caplog.at_level(logging.WARNING, logger="dshweb.collect.lease"):
        second = lease_take(name="a", path="/h/a", heartbeat_every=1.0)
    assert "taking over a stale lease: home a (/h/a)" in caplog.text
    assert CollectorLease.objects.get(name="a").version == 7  # versions go on, never back
    with pytest.raises(LeaseLost, match="taken over"):
        lease_renew(first)
    assert not lease_release(first)  # a lost lease is not released by its old holder
    lease_renew(second)


def test_a_released_lease_is_free_at_once_and_keeps_the_last_seen_time() -> None:
    lease = lease_take(name="a", path="/h/a", heartbeat_every=60.0)
    assert lease_release(lease)
    row = CollectorLease.objects.get(name="a")
    assert row.released_at is not None and row.heartbeat_at == row.released_at
    with pytest.raises(LeaseLost):
        lease_renew(lease)
    lease_take(name="a", path="/h/a", heartbeat_every=60.0)


def test_a_stale_lease_of_another_name_on_the_same_path_gives_way() -> None:
    lease_release(lease_take(name="old", path="/h/a", heartbeat_every=1.0))
    CollectedSession.objects.create(
        home="old", session_id="s", version=1, blob=b"x", updated_at=timezone.now()
    )
    lease_take(name="new", path="/h/a", heartbeat_every=1.0)
    assert list(CollectorLease.objects.values_list("name", flat=True)) == ["new"]
    assert not CollectedSession.objects.exists()  # the renamed home's rows went with it


def test_the_same_path_on_another_machine_is_another_home() -> None:
    lease_take(name="laptop", path="/root/.dsh", heartbeat_every=60.0)
    CollectorLease.objects.filter(name="laptop").update(host="laptop.example")
    lease_take(name="server", path="/root/.dsh", heartbeat_every=60.0)  # this machine's
    rows = CollectorLease.objects.order_by("name").values_list("name", "host", "path")
    assert [(n, h == "laptop.example", p) for n, h, p in rows] == [
        ("laptop", True, "/root/.dsh"),
        ("server", False, "/root/.dsh"),
    ]
    with pytest.raises(LeaseRefused, match=r"home server \(/root/.dsh\) is collected by"):
        lease_take(name="again", path="/root/.dsh", heartbeat_every=60.0)
