"""The watcher's lanes in the real ASGI application (the hub and the watcher in this
process): a browser notice never waits behind webhooks; each look for due deliveries
shows every owner's, however many one owner has; an attempt that ends during a look is
not lost."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.db.utils import OperationalError
from django.utils import timezone

from dshweb.alerts import deliveries
from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule
from dshweb.alerts.watcher import AlertWatcher
from dshweb.alerts.webhooks import target_key
from dshweb.live import timing
from tests.alerts.test_alerts_end_to_end import (  # noqa: F401 (fixtures)
    cut_home,
    first_look,
    make_rule,
    socket_of,
    stop,
    user_cookie,
)
from tests.alerts.test_fair_delivery import blackhole

pytestmark = [pytest.mark.django_db(transaction=True)]

NOTICE_WITHIN = 3.0
"""From the frames on disk to the browser notice: the hub's and the watcher's looks and
one channel-layer message, on a loaded machine (it took 25 s behind 20 slow webhooks
when they shared the delivery threads)."""


@pytest.mark.timing
@pytest.mark.asyncio
async def test_a_browser_notice_waits_for_no_webhook(
    tmp_path: Path,
    settings: Any,
    user_cookie: tuple[Any, bytes],  # noqa: F811
    stop: None,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    log, rest = cut_home(tmp_path, settings, "auto-compact", 0.3)
    bea, cookie = user_cookie
    with blackhole() as hole:

        def rules() -> None:
            ann = get_user_model().objects.create_user("ann", password="pw-for-tests-only")
            for n in range(20):  # ann's first by name: their deliveries are the older
                make_rule(ann, name=f"a-slow-{n:02}", webhook_url=hole.url, notify_browser=False)
            make_rule(bea, name="b-notice", notify_browser=True)

        await database_sync_to_async(rules)()
        communicator = await socket_of(cookie)
        await first_look(caplog, rules=21)
        loop = asyncio.get_running_loop()
        appended = loop.time()
        for frame in rest:
            with log.open("ab") as handle:
                handle.write(frame)
        notice = ""
        while 'id="alert-toasts"' not in notice:
            left = appended + NOTICE_WITHIN * 3 - loop.time()
            try:
                notice = str(await communicator.receive_from(timeout=max(left, 0.01)))
            except TimeoutError:
                pytest.fail(f"no notice within {NOTICE_WITHIN * 3} s ({hole.came} of ann's)")
        took = loop.time() - appended
        print(f"bea's browser notice after {took:.2f} s beside 20 slow webhooks")
        assert took < NOTICE_WITHIN, took
        assert 'data-headline="b-notice: ' in notice
        # ann's attempts go on beside (they may start a little after bea's notice).
        while hole.came < 1 and loop.time() < appended + NOTICE_WITHIN * 3:
            await asyncio.sleep(0.05)
        assert hole.came >= 1, "none of ann's attempts started"
        await communicator.disconnect()


def test_a_look_for_due_deliveries_shows_every_owner_however_many_one_has() -> None:
    users = get_user_model().objects
    ann = users.create_user("ann", password="pw-for-tests-only")
    bea = users.create_user("bea", password="pw-for-tests-only")
    hook = "http://Relay.Example:8080/x"
    ann_rule = make_rule(ann, webhook_url=hook, email_to="ann@example.test")
    bea_rule = make_rule(bea, webhook_url="https://hooks.example/y", notify_browser=False)
    many = timing.DUE_LOOKED_AT + 50
    for n in range(many):
        deliveries.record_firing(
            ann_rule, home="local", session_id=f"s{n}", title="", key=str(n), summary="folded"
        )
    # ann's are all older than bea's.
    AlertDelivery.objects.update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    newest = deliveries.record_firing(
        bea_rule, home="local", session_id="b", title="", key="1", summary="folded"
    )
    (bea_hook,) = newest.deliveries.all()
    due, _ = deliveries.due_deliveries("local")
    by_way: dict[tuple[int, str], list[deliveries.Due]] = {}
    for item in due:
        by_way.setdefault((item.owner, item.channel), []).append(item)
    # Each owner's oldest DUE_LOOKED_AT per way of telling, and bea's one among them.
    assert {key: len(items) for key, items in by_way.items()} == {
        (ann.pk, "browser"): timing.DUE_LOOKED_AT,
        (ann.pk, "webhook"): timing.DUE_LOOKED_AT,
        (ann.pk, "email"): timing.DUE_LOOKED_AT,
        (bea.pk, "webhook"): 1,
    }
    assert by_way[bea.pk, "webhook"] == [
        deliveries.Due(bea_hook.pk, "webhook", bea.pk, "hooks.example:443")
    ]
    assert {item.target for item in by_way[ann.pk, "webhook"]} == {"relay.example:8080"}
    assert {item.target for item in by_way[ann.pk, "email"]} == {""}
    oldest_hooks = AlertDelivery.objects.filter(channel="webhook", firing__rule=ann_rule).order_by(
        "next_attempt_at", "id"
    )
    assert [item.delivery_id for item in by_way[ann.pk, "webhook"]] == list(
        oldest_hooks.values_list("pk", flat=True)[: timing.DUE_LOOKED_AT]
    )
    # Attempts under way are left out (their claim is not written yet).
    under_way = {item.delivery_id for item in due[:10]}
    again, _ = deliveries.due_deliveries("local", leaving_out=under_way)
    assert not under_way & {item.delivery_id for item in again}
    assert AlertFiring.objects.count() == many + 1
    assert AlertRule.objects.count() == 2


@pytest.mark.asyncio
async def test_an_attempt_that_ends_while_the_watcher_reads_is_not_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An attempt that ends during a look for due work asks for another look (its lane
    has room now, a retry of its own may be due sooner): the look's end keeps that."""
    watcher = AlertWatcher(cast(Any, None), "local")

    def reading(home: str, **options: Any) -> tuple[list[deliveries.Due], float | None]:
        watcher._deliveries_at = 0.0  # what an attempt ending now does
        return [], 30.0

    monkeypatch.setattr(deliveries, "due_deliveries", reading)
    assert await watcher._deliver() == 30.0
    assert watcher._deliveries_at == 0.0  # the next round looks again at once

    def failing(home: str, **options: Any) -> tuple[list[deliveries.Due], float | None]:
        raise OperationalError("the database went away")

    monkeypatch.setattr(deliveries, "due_deliveries", failing)
    with pytest.raises(OperationalError):
        await watcher._deliver()
    assert watcher._deliveries_at == 0.0  # looked at again once the database is back


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://Hooks.Example/a?b=1", "hooks.example:443"),
        ("http://hooks.example/other", "hooks.example:80"),
        ("http://hooks.example:8080", "hooks.example:8080"),
        ("https://[2001:DB8::1]:8443/x", "[2001:db8::1]:8443"),
        ("ftp://hooks.example/", "ftp://hooks.example/"),  # no receiver: counted as itself
        ("http://hooks.example:99999/", "http://hooks.example:99999/"),
    ],
)
def test_a_target_is_the_receiver_a_url_names_resolving_nothing(url: str, key: str) -> None:
    assert target_key(url) == key
