"""The alerts pages (rules edited in the browser, firings with their deliveries), the
admin's view of them, and the webhook's two body formats."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.alerts import deliveries
from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule
from dshweb.live import timing

pytestmark = [pytest.mark.django_db]

VALID = {
    "name": "near the fold",
    "enabled": "on",
    "condition": "fold-soon",
    "band": "tight",
    "steps": "3",
    "ratio": "0.5",
    "window": "10",
    "scope": "all",
    "cooldown_seconds": "600",
    "notify_browser": "on",
    "webhook_format": "json",
}


@pytest.fixture(autouse=True)
def _local_receivers(settings: Any) -> None:
    """The local receivers these tests name, listed as staff lists internal hosts."""
    settings.DSHWEB = {**settings.DSHWEB, "WEBHOOK_ALLOWED_HOSTS": ("127.0.0.1",)}


def signed_in(name: str = "ann", **extra: Any) -> tuple[Client, Any]:
    user = get_user_model().objects.create_user(name, password="pw-for-tests-only", **extra)
    client = Client()
    client.force_login(user)
    return client, user


def test_the_pages_need_a_login() -> None:
    answer = Client().get("/alerts/")
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")


def test_a_rule_made_in_the_browser_is_the_users_and_its_secret_is_shown_once() -> None:
    client, user = signed_in()
    answer = client.post(
        "/alerts/new/",
        VALID
        | {"webhook_url": "http://127.0.0.1:9/hook", "scope": "folder", "folder": "/home/ann/app"},
    )
    rule = AlertRule.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/alerts/{rule.pk}/"
    assert (rule.owner, rule.condition, rule.steps, rule.folder) == (
        user,
        "fold-soon",
        3,
        "/home/ann/app",
    )
    assert len(rule.webhook_secret) == 64
    first = client.get(answer["Location"]).content.decode()
    assert f"<code>{rule.webhook_secret}</code>" in first
    assert rule.webhook_secret not in client.get(answer["Location"]).content.decode()
    listed = client.get("/alerts/").content.decode()
    assert f'id="alert-rule-{rule.pk}"' in listed
    assert "fold expected within 3 steps" in listed and "in <code>/home/ann/app</code>" in listed


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"condition": "cache-low", "ratio": "2"}, "ratio", "A ratio above 0 and at most 1"),
        ({"condition": "cache-low", "window": "65"}, "window", "From 1 to 64 steps."),
        ({"steps": "0"}, "steps", "From 1 to 100 steps."),
        ({"scope": "folder"}, "folder", "Name the project folder this rule watches."),
        ({"scope": "folder", "folder": "app"}, "folder", "An absolute path"),
        ({"scope": "session"}, "scope_session", "Name the session this rule watches"),
        ({"webhook_url": "ftp://x/"}, "webhook_url", "Enter a valid URL."),
        ({"notify_browser": ""}, None, "Choose at least one way to be told"),
        ({"condition": "nope"}, "condition", "Select a valid choice."),
        ({"condition": "session-cost", "usd": "0"}, "usd", "An amount in dollars above 0"),
        ({"condition": "day-cost", "usd": "-5"}, "usd", "An amount in dollars above 0"),
        ({"condition": "day-cost", "usd": "abc"}, "usd", "Enter a number."),
        (
            {"condition": "day-cost", "usd": "5", "scope": "folder", "folder": "/home/ann/app"},
            "scope",
            "cost today is that of all its sessions",
        ),
    ],
)
def test_invalid_rules_are_refused_next_to_their_field(
    change: dict[str, str], field: str | None, message: str
) -> None:
    client, _ = signed_in()
    data = {k: v for k, v in (VALID | change).items() if v != ""}
    answer = client.post("/alerts/new/", data)
    assert answer.status_code == 200
    page = answer.content.decode()
    marker = f'data-key="{field}"' if field else 'id="alert-form-errors"'
    section = page[page.index(marker) :]
    assert message in section[: section.index("</div>", section.index("error")) + 6]
    assert not AlertRule.objects.exists()


def test_a_parameter_another_condition_reads_does_not_block_a_save() -> None:
    client, _ = signed_in()
    answer = client.post("/alerts/new/", VALID | {"condition": "folded", "ratio": "9"})
    assert answer.status_code == 302
    assert AlertRule.objects.get().ratio == 0.5  # the saved default, not the stray value


def test_another_users_rule_is_not_found_and_not_deleted() -> None:
    _, owner = signed_in("owner")
    rule = AlertRule.objects.create(owner=owner, name="mine", condition="folded")
    client, _ = signed_in("other")
    assert client.get(f"/alerts/{rule.pk}/").status_code == 404
    assert client.post(f"/alerts/{rule.pk}/delete/").status_code == 404
    assert AlertRule.objects.filter(pk=rule.pk).exists()
    assert "mine" not in client.get("/alerts/").content.decode()


def test_changes_need_the_csrf_token() -> None:
    _, user = signed_in()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post("/alerts/new/", VALID).status_code == 403
    assert not AlertRule.objects.exists()


def test_a_new_secret_replaces_the_old_one_and_is_shown_once() -> None:
    client, user = signed_in()
    rule = AlertRule.objects.create(owner=user, name="r", condition="folded", webhook_secret="old")
    answer = client.post(f"/alerts/{rule.pk}/secret/")
    rule.refresh_from_db()
    assert rule.webhook_secret != "old" and len(rule.webhook_secret) == 64
    assert rule.webhook_secret in client.get(answer["Location"]).content.decode()


def firing_with_deliveries(user: Any) -> AlertFiring:
    rule = AlertRule.objects.create(
        owner=user,
        name="folds",
        condition="folded",
        webhook_url="http://127.0.0.1:9/",
        webhook_secret="k" * 64,
    )
    firing = AlertFiring.objects.create(
        rule=rule,
        home="local",
        session_id="s1",
        title="Refactor",
        key="412",
        summary="automatic compaction: 12,400 → 3,100 tokens",
        fired_at=datetime(2026, 12, 2, 10, 0, tzinfo=UTC),
    )
    AlertDelivery.objects.create(firing=firing, channel="browser", state="sent", attempts=1)
    AlertDelivery.objects.create(
        firing=firing,
        channel="webhook",
        state="failed",
        attempts=5,
        last_error="could not reach the receiver: Connection refused",
    )
    return firing


def test_firings_show_each_delivery_with_its_attempts_and_last_error() -> None:
    client, user = signed_in()
    firing = firing_with_deliveries(user)
    page = client.get("/alerts/").content.decode()
    item = page[page.index(f'id="alert-firing-{firing.pk}"') :]
    assert 'data-channel="webhook" data-state="failed" data-attempts="5"' in item
    assert "could not reach the receiver: Connection refused" in item
    assert 'data-channel="browser" data-state="sent" data-attempts="1"' in item
    assert "automatic compaction: 12,400 → 3,100 tokens" in item


def test_the_admin_shows_firings_and_deliveries_but_never_the_secret() -> None:
    client, user = signed_in("admin", is_staff=True, is_superuser=True)
    firing = firing_with_deliveries(user)
    change = client.get(f"/admin/alerts/alertfiring/{firing.pk}/change/").content.decode()
    assert "could not reach the receiver: Connection refused" in change
    rule_page = client.get(f"/admin/alerts/alertrule/{firing.rule_id}/change/").content.decode()
    assert "k" * 64 not in rule_page


def test_the_webhook_body_in_json_and_in_slack_form() -> None:
    _, user = signed_in()
    firing = firing_with_deliveries(user)
    body = json.loads(deliveries.webhook_body(firing.rule, firing))
    assert body == {
        "id": firing.pk,
        "rule": {"id": firing.rule_id, "name": "folds", "condition": "folded"},
        "home": "local",
        "session": "s1",
        "title": "Refactor",
        "summary": "automatic compaction: 12,400 → 3,100 tokens",
        "key": "412",
        "firedAt": "2026-12-02T10:00:00+00:00",
        "url": "/homes/local/sessions/s1/",
    }
    firing.rule.webhook_format = AlertRule.WebhookFormat.SLACK
    slack = json.loads(deliveries.webhook_body(firing.rule, firing))
    assert slack == {
        "text": "*folds: Refactor*\nautomatic compaction: 12,400 → 3,100 tokens\n"
        "</homes/local/sessions/s1/|Open the session>"
    }


def test_the_signature_is_hmac_sha256_over_the_time_and_body() -> None:
    expected = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert deliveries.signature("k", 1_700_000_000, b"{}") == f"t=1700000000,v1={expected}"


def test_a_delivery_whose_rule_was_deleted_meanwhile_is_let_go() -> None:
    _, user = signed_in()
    firing = firing_with_deliveries(user)
    ids = list(firing.deliveries.values_list("pk", flat=True))
    AlertDelivery.objects.filter(pk__in=ids).update(state="pending")
    firing.rule.delete()
    assert [deliveries.attempt(pk) for pk in ids] == [None, None]
    deliveries.browser_sent(ids[0], None)  # nothing left to record
    assert not AlertDelivery.objects.exists()


def test_of_two_watchers_trying_one_delivery_at_once_one_sends(mailoutbox: list[Any]) -> None:
    _, user = signed_in()
    user.email = "me@example.test"
    user.save()
    rule = AlertRule.objects.create(
        owner=user,
        name="folds",
        condition="folded",
        email_to="me@example.test",
        notify_browser=False,
    )
    firing = deliveries.record_firing(
        rule, home="local", session_id="s1", title="Refactor", key="412", summary="folded"
    )
    (delivery,) = firing.deliveries.all()
    # Each watcher read the row as pending and due; the first to claim it sends.
    seen_by_other = AlertDelivery.objects.get(pk=delivery.pk)
    assert deliveries.attempt(delivery.pk) is None
    assert len(mailoutbox) == 1
    assert not deliveries._claimed(seen_by_other)
    # A claim whose process died holds the delivery for ALERT_CLAIM, then it is due again.
    AlertDelivery.objects.filter(pk=delivery.pk).update(state="pending", attempts=0)
    assert deliveries._claimed(AlertDelivery.objects.get(pk=delivery.pk))
    due, wait = deliveries.due_deliveries("local")
    assert due == [] and wait is not None
    assert timing.ALERT_CLAIM - 5 < wait <= timing.ALERT_CLAIM


def _field_names(html: str) -> tuple[set[str], set[str]]:
    """The names of the fields a person sees, and of those sent along hidden."""
    shown = set(re.findall(r'<div class="field[^"]*" data-key="(\w+)">', html))
    hidden = set(re.findall(r'<input type="hidden" name="(\w+)"', html)) - {"csrfmiddlewaretoken"}
    return shown, hidden


def test_the_form_shows_only_the_fields_its_condition_and_scope_use() -> None:
    client, _ = signed_in()
    shown, hidden = _field_names(client.get("/alerts/new/").content.decode())
    assert {"band"} <= shown and not {"steps", "ratio", "window", "folder"} & shown
    assert {"steps", "ratio", "window", "folder", "scope_home", "scope_session"} <= hidden
    page = client.get("/alerts/new/?condition=cache-low&scope=folder&name=mine").content.decode()
    shown, hidden = _field_names(page)
    assert {"ratio", "window", "folder"} <= shown and not {"band", "steps"} & shown
    assert {"band", "steps"} <= hidden and 'value="mine"' in page  # kept as typed
    shown, _ = _field_names(
        client.get("/alerts/new/?condition=folded&scope=session").content.decode()
    )
    assert {"scope_home", "scope_session"} <= shown
    assert not {"band", "steps", "ratio", "window", "folder"} & shown
    # Posted as shown (the unseen fields along), the rule is made.
    made = client.post(
        "/alerts/new/",
        {
            "name": "cache",
            "enabled": "on",
            "condition": "cache-low",
            "band": "tight",
            "steps": "3",
            "ratio": "0.4",
            "window": "8",
            "scope": "all",
            "cooldown_seconds": "600",
            "notify_browser": "on",
            "webhook_format": "json",
        },
    )
    assert made.status_code == 302
    rule = AlertRule.objects.get(name="cache")
    assert (rule.condition, rule.ratio, rule.window) == ("cache-low", 0.4, 8)
    edit = client.get(f"/alerts/{rule.pk}/").content.decode()
    assert {"ratio", "window"} <= _field_names(edit)[0]


@pytest.mark.parametrize(
    ("change", "seen", "needed"),
    [
        ({}, "band", "steps"),  # the condition changed, the page still showed a band's
        ({"scope": "folder", "folder": "/home/ann/app"}, "steps", "folder steps"),
        ({"condition": "cache-low"}, "ratio", "ratio window"),
    ],
)
def test_a_rule_is_saved_only_when_the_page_showed_its_fields(
    change: dict[str, str], seen: str, needed: str
) -> None:
    """A form posted with a condition or scope whose fields the page did not show (its
    ``fields_seen``) is not saved: it comes back showing them, and once posted from that
    page, the rule is made with what it showed."""
    client, _ = signed_in()
    data = VALID | change
    answer = client.post("/alerts/new/", data | {"fields_seen": seen})
    assert answer.status_code == 200
    assert not AlertRule.objects.exists()
    page = answer.content.decode()
    assert set(needed.split()) <= _field_names(page)[0]
    assert f'<input type="hidden" name="fields_seen" value="{needed}">' in page
    errors = page[page.index('id="alert-form-errors"') :]
    assert "the form now shows the fields they use" in errors[: errors.index("</div>")]
    made = client.post("/alerts/new/", data | {"fields_seen": needed})
    assert made.status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.condition, rule.scope) == (data["condition"], data["scope"])


def test_a_refused_webhook_says_why_in_the_pages_language() -> None:
    client, _ = signed_in()
    answer = client.post(
        "/alerts/new/",
        VALID | {"webhook_url": "http://10.0.0.1/hook"},
        HTTP_ACCEPT_LANGUAGE="zh-CN",
    )
    page = answer.content.decode()
    field = page[page.index('data-key="webhook_url"') :].split("</small>", 1)[0]
    assert "10.0.0.1 是内部地址（10.0.0.1）：Webhook 只发往公网地址" in field
    assert "internal address" not in field
    assert not AlertRule.objects.exists()


def test_a_budget_rule_is_made_with_its_amount_and_listed_with_it() -> None:
    client, _ = signed_in()
    form = client.get("/alerts/new/?condition=day-cost").content.decode()
    shown, _ = _field_names(form)
    assert {"usd", "scope_home"} <= shown and not {"band", "steps", "ratio"} & shown
    made = client.post(
        "/alerts/new/",
        VALID | {"condition": "day-cost", "usd": "5", "fields_seen": "scope_home usd"},
    )
    assert made.status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.condition, rule.usd, rule.scope, rule.scope_home) == ("day-cost", 5.0, "all", "")
    listed = client.get("/alerts/").content.decode()
    assert "the cost today reaches $5.00" in listed and "each home" in listed
    session_rule = client.post(
        "/alerts/new/",
        VALID | {"name": "dear", "condition": "session-cost", "usd": "0.25", "fields_seen": "usd"},
    )
    assert session_rule.status_code == 302
    assert "a session's cost reaches $0.250" in client.get("/alerts/").content.decode()
