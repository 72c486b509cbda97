"""Budget alerts: a session's cost, and a home's cost today, reaching an amount fire once
when they cross it, through the watcher (as it runs beside the hub, here by hand), with
the server's rates and time zone; again only for a new day, and not after a restart."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.alerts import deliveries
from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule
from dshweb.alerts.watcher import AlertWatcher
from dshweb.core.fold.billing import Slot, slot_of
from dshweb.core.fold.cost import RateBook, SessionCost
from dshweb.core.fold.gauge import context_gauge
from dshweb.live.hub import HomeChange, HomeView, SessionView
from tests.support.snapshots import session_snapshot

pytestmark = [pytest.mark.django_db]

MODEL = ("deepseek-v4-pro", "deepseek-official")


def cost_of(tokens: int, at_ms: int) -> SessionCost:
    """Requests of ``tokens`` output tokens at ``at_ms``."""
    slot: Slot = slot_of(MODEL, at_ms)
    return SessionCost(requests=((slot, (0, tokens, 0, 0)),))


def dollars(tokens: int, at_ms: int) -> float:
    total, unrated = RateBook().total(cost_of(tokens, at_ms))
    assert total is not None and not unrated
    return total


def look(watcher: AlertWatcher, home: Path, sessions: dict[str, SessionCost]) -> None:
    """The watcher looks at the home whose sessions cost so much now (each changed)."""
    now = int(time.time() * 1000)
    views = {}
    for session_id, cost in sessions.items():
        shot = session_snapshot(session_id, now, cost=cost, title=f"title {session_id}")
        views[session_id] = SessionView(shot, context_gauge(shot), 1, True)
    view = HomeView(home, views, name="local")
    watcher._take(HomeChange(view, frozenset(views), frozenset()))
    watcher._evaluate(set(views))


def make_rule(condition: str, usd: float, **fields: Any) -> AlertRule:
    user, _ = get_user_model().objects.get_or_create(username="payer")
    fields = {"name": condition, "cooldown_seconds": 0, "email_to": ""} | fields
    return AlertRule.objects.create(
        owner=user, condition=condition, usd=usd, webhook_secret="s" * 64, **fields
    )


def fired() -> list[tuple[str, str, str, str]]:
    return list(
        AlertFiring.objects.order_by("id").values_list("rule__name", "session_id", "key", "summary")
    )


def test_a_session_and_a_day_crossing_their_amount_fire_once_each(tmp_path: Path) -> None:
    now = int(time.time() * 1000)
    low, high, higher = dollars(10_000, now), dollars(30_000, now), dollars(50_000, now)
    amount = (low + high) / 2
    make_rule("session-cost", amount)
    make_rule("day-cost", 2 * amount)  # the day: both sessions together
    watcher = AlertWatcher(cast(Any, None), "local")  # looked at by hand: no source
    look(watcher, tmp_path, {"a": cost_of(10_000, now), "b": cost_of(10_000, now)})
    assert fired() == []  # 2 × low: below both
    look(watcher, tmp_path, {"a": cost_of(30_000, now), "b": cost_of(10_000, now)})
    today = datetime.now(UTC).date().isoformat()  # TIME_ZONE: UTC
    (session_firing, day_firing) = fired()
    assert session_firing[:3] == ("session-cost", "a", "on")
    assert session_firing[3].startswith("session cost $") and "past $" in session_firing[3]
    assert day_firing[:3] == ("day-cost", "", today)  # the home's: no session
    assert day_firing[3].startswith(f"cost on {today} in home local: $")
    # Past it, and growing: nothing more.
    look(watcher, tmp_path, {"a": cost_of(50_000, now), "b": cost_of(10_000, now)})
    assert len(fired()) == 2 and watcher.fired == 2
    # b crosses on its own: its own firing; the day holds already.
    look(watcher, tmp_path, {"a": cost_of(50_000, now), "b": cost_of(30_000, now)})
    assert [f[:2] for f in fired()] == [
        ("session-cost", "a"),
        ("day-cost", ""),
        ("session-cost", "b"),
    ]
    assert higher > high
    # Started again: nothing is told twice.
    again = AlertWatcher(cast(Any, None), "local")
    look(again, tmp_path, {"a": cost_of(50_000, now), "b": cost_of(30_000, now)})
    assert again.fired == 0
    # Every firing is delivered as the rule says (a browser notice); the home's links to
    # the cost page, and the alerts page lists it.
    assert AlertDelivery.objects.filter(channel="browser").count() == 3
    home_firing = AlertFiring.objects.get(session_id="")
    assert deliveries.firing_payload(home_firing)["url"] == "/cost/"
    assert deliveries.headline(home_firing) == "day-cost: local"
    client = Client()
    client.force_login(home_firing.rule.owner)
    page = client.get("/alerts/").content.decode()
    assert f'id="alert-firing-{home_firing.pk}"' in page and 'href="/cost/"' in page


def test_yesterdays_cost_is_not_todays(tmp_path: Path) -> None:
    """A day rule reads today's cost alone: yesterday's requests, however dear, do not
    hold it; today's crossing fires, keyed by today's date (a new day, a new key:
    tests/core/alerts/test_alerts.py)."""
    now = int(time.time() * 1000)
    yesterday = now - 86_400_000
    amount = dollars(20_000, now)
    make_rule("day-cost", amount)
    watcher = AlertWatcher(cast(Any, None), "local")
    look(watcher, tmp_path, {"a": cost_of(10_000, now)})
    # Yesterday's big spend (a session of yesterday, seen now) is not today's.
    both = SessionCost(
        requests=(
            (slot_of(MODEL, yesterday), (0, 90_000, 0, 0)),
            (slot_of(MODEL, now), (0, 10_000, 0, 0)),
        )
    )
    look(watcher, tmp_path, {"a": both})
    assert fired() == []
    grown = SessionCost(requests=(*both.requests[:1], (slot_of(MODEL, now), (0, 30_000, 0, 0))))
    look(watcher, tmp_path, {"a": grown})
    today = datetime.now(UTC).date()
    assert [f[2] for f in fired()] == [today.isoformat()]
    assert (today - timedelta(days=1)).isoformat() not in fired()[0][3]


def test_a_day_rule_for_another_home_and_a_partial_cost(tmp_path: Path) -> None:
    now = int(time.time() * 1000)
    make_rule("day-cost", 0.000001, name="elsewhere", scope_home="other-home")
    make_rule("day-cost", 0.000001, name="here", scope_home="local")
    unpriced: Slot = slot_of(("mystery-model-9", "x"), now)
    mixed = SessionCost(
        requests=((slot_of(MODEL, now), (0, 10_000, 0, 0)), (unpriced, (0, 10_000, 0, 0)))
    )
    watcher = AlertWatcher(cast(Any, None), "local")
    look(watcher, tmp_path, {"a": cost_of(0, now)})  # first sight: nothing spent
    look(watcher, tmp_path, {"a": mixed})
    ((name, _, _, summary),) = fired()
    assert name == "here"
    assert summary.endswith("(partial: a model without a price is not counted)")
