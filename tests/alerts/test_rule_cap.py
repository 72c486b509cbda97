"""A user has at most ``WEBHOOK_RULES_PER_USER`` rules with a webhook (10 by default, staff
too): the form says so next to the webhook field, in the page's language; a rule that
has one keeps it; two saves at once cannot both pass the last place."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb import environment
from dshweb.alerts.forms import AlertRuleForm, save_rule
from dshweb.alerts.models import AlertRule
from dshweb.config import get_config
from tests.support.alert_receivers import RULE_FORM

pytestmark = [pytest.mark.django_db]

RULE = RULE_FORM
HOOK = "http://127.0.0.1:9/hook"
FULL = "the most one person may have"


@pytest.fixture(autouse=True)
def _local_receivers(settings: Any) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "WEBHOOK_ALLOWED_HOSTS": ("127.0.0.1",)}


def signed_in(name: str, **extra: Any) -> tuple[Client, Any]:
    user = get_user_model().objects.create_user(name, password="pw-for-tests-only", **extra)
    client = Client()
    client.force_login(user)
    return client, user


def make(client: Client, name: str, **fields: str) -> Any:
    return client.post("/alerts/new/", RULE | {"name": name} | fields)


def hooks_of(user: Any) -> int:
    return AlertRule.objects.filter(owner=user).exclude(webhook_url="").count()


@pytest.mark.parametrize("staff", [False, True])
def test_the_eleventh_webhook_rule_is_refused_with_the_reason(staff: bool) -> None:
    assert get_config().webhook_rules_per_user == 10
    client, user = signed_in("ann", is_staff=staff)
    for n in range(10):
        assert make(client, f"hook {n}", webhook_url=f"{HOOK}/{n}").status_code == 302
    refused = make(client, "one more", webhook_url=HOOK)
    assert refused.status_code == 200
    said = html.unescape(refused.content.decode())
    assert "Your rules with a webhook: 10, the most one person may have (10)." in said
    assert hooks_of(user) == 10 and not AlertRule.objects.filter(name="one more").exists()
    # Other ways of telling are not held to it, nor another user.
    assert make(client, "browser", notify_browser="on").status_code == 302
    other, bea = signed_in("bea")
    assert make(other, "bea's", webhook_url=HOOK).status_code == 302
    assert hooks_of(bea) == 1


def test_a_rule_keeps_its_webhook_and_gets_one_only_below_the_cap(settings: Any) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "WEBHOOK_RULES_PER_USER": 2}
    client, user = signed_in("ann")
    for n in range(2):
        assert make(client, f"hook {n}", webhook_url=HOOK).status_code == 302
    assert make(client, "browser", notify_browser="on").status_code == 302
    browser = AlertRule.objects.get(name="browser")
    hooked = AlertRule.objects.get(name="hook 0")
    # At the cap: a rule without a webhook cannot get one; one with a webhook changes it.
    edit = client.post(
        f"/alerts/{browser.pk}/",
        RULE | {"name": "browser", "notify_browser": "on"} | {"webhook_url": HOOK},
    )
    assert edit.status_code == 200 and FULL in html.unescape(edit.content.decode())
    assert AlertRule.objects.get(pk=browser.pk).webhook_url == ""
    moved = client.post(
        f"/alerts/{hooked.pk}/", RULE | {"name": "hook 0", "webhook_url": f"{HOOK}/moved"}
    )
    assert moved.status_code == 302
    assert AlertRule.objects.get(pk=hooked.pk).webhook_url == f"{HOOK}/moved"
    # A cap lowered below what a user has: their rules keep their webhooks.
    settings.DSHWEB = {**settings.DSHWEB, "WEBHOOK_RULES_PER_USER": 1}
    kept = client.post(f"/alerts/{hooked.pk}/", RULE | {"name": "renamed", "webhook_url": HOOK})
    assert kept.status_code == 302 and hooks_of(user) == 2
    # Taken off one, and back under the cap, another rule gets one.
    settings.DSHWEB = {**settings.DSHWEB, "WEBHOOK_RULES_PER_USER": 2}
    off = client.post(f"/alerts/{hooked.pk}/", RULE | {"name": "renamed", "notify_browser": "on"})
    assert off.status_code == 302 and hooks_of(user) == 1
    got = client.post(f"/alerts/{browser.pk}/", RULE | {"name": "browser", "webhook_url": HOOK})
    assert got.status_code == 302 and hooks_of(user) == 2


def test_no_webhook_at_all_when_staff_allow_none(settings: Any) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "WEBHOOK_RULES_PER_USER": 0}
    client, user = signed_in("ann", is_staff=True)
    refused = make(client, "hook", webhook_url=HOOK)
    assert "This server sends no webhooks: staff allow none." in html.unescape(
        refused.content.decode()
    )
    assert hooks_of(user) == 0


def test_the_refusal_is_in_the_pages_language(settings: Any) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "WEBHOOK_RULES_PER_USER": 1}
    client, _ = signed_in("ann")
    assert make(client, "first", webhook_url=HOOK).status_code == 302
    chinese = client.post(
        "/alerts/new/",
        RULE | {"name": "second", "webhook_url": HOOK},
        HTTP_ACCEPT_LANGUAGE="zh-CN",
    )
    said = html.unescape(chinese.content.decode())
    assert "你带 Webhook 的规则已有 1 条，达到每人上限（1 条）。" in said and FULL not in said


def test_two_saves_at_once_cannot_both_take_the_last_place(settings: Any) -> None:
    """Both forms were checked while one place was left; the second save finds it taken
    (the owner is locked meanwhile) and says so on its form."""
    settings.DSHWEB = {**settings.DSHWEB, "WEBHOOK_RULES_PER_USER": 1}
    user = get_user_model().objects.create_user("ann", password="pw-for-tests-only")
    forms = [
        AlertRuleForm(RULE | {"name": name, "webhook_url": HOOK}, instance=AlertRule(owner=user))
        for name in ("first", "second")
    ]
    assert all(form.is_valid() for form in forms)
    assert save_rule(forms[0]) is not None
    assert save_rule(forms[1]) is None
    assert FULL in forms[1].errors["webhook_url"][0]
    assert hooks_of(user) == 1


def test_the_cap_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DSHWEB_WEBHOOK_RULES_PER_USER", raising=False)
    assert environment.webhook_rules_per_user() == 10
    monkeypatch.setenv("DSHWEB_WEBHOOK_RULES_PER_USER", " 25 ")
    assert environment.webhook_rules_per_user() == 25
    for bad in ("-1", "ten", "2.5", "١٢"):
        monkeypatch.setenv("DSHWEB_WEBHOOK_RULES_PER_USER", bad)
        with pytest.raises(environment.ConfigurationError, match="not a whole number of rules"):
            environment.webhook_rules_per_user()
