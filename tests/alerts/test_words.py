"""An alert speaks its owner's language: the rule keeps the language of the page it was
saved from, and what fired (the summary, the email's and Slack's own words) is in it; the
English summary is the core's, word for word."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from dshweb.alerts import deliveries
from dshweb.alerts.models import AlertFiring, AlertRule
from dshweb.alerts.words import summary_in
from dshweb.core.alerts.conditions import Condition, RuleSpec, condition_reading
from dshweb.core.fold.gauge import Band, context_gauge
from tests.alerts.test_views import VALID
from tests.support.snapshots import fixture_snapshot

pytestmark = pytest.mark.django_db

FORM = {**VALID, "name": "tight", "condition": "band", "webhook_format": "slack"}


def test_a_rule_keeps_the_language_it_was_saved_in() -> None:
    client = Client()
    client.force_login(get_user_model().objects.create_user("li", password="x"))
    assert client.post("/alerts/new/", FORM, HTTP_ACCEPT_LANGUAGE="zh-CN").status_code == 302
    rule = AlertRule.objects.get(name="tight")
    assert rule.language == "zh-hans"
    saved = client.post(f"/alerts/{rule.pk}/", FORM, HTTP_ACCEPT_LANGUAGE="en")
    assert saved.status_code == 302
    rule.refresh_from_db()
    assert rule.language == "en"


def test_every_summary_reads_the_same_in_english_and_has_its_chinese() -> None:
    folded = fixture_snapshot("auto-compact")
    gauge = context_gauge(folded)
    specs = [
        RuleSpec(Condition.COMPACTED),
        RuleSpec(Condition.BAND, band=Band.TIGHT),
    ]
    tight = gauge.__class__(
        gauge.used, gauge.window, gauge.percent, gauge.threshold, 500, Band.TIGHT
    )
    readings = [
        condition_reading(specs[0], folded, gauge),
        condition_reading(specs[1], folded, tight),
    ]
    assert all(r.key is not None and r.said for r in readings)
    for reading in readings:
        assert summary_in("en", reading) == reading.summary  # the core's words, as they were
        chinese = summary_in("zh-hans", reading)
        assert chinese != reading.summary and not any(w in chinese for w in ("fold", "context"))
    assert summary_in("zh-hans", readings[1]).startswith("上下文「紧张」")


def test_the_email_and_slack_words_are_in_the_rules_language(mailoutbox: list[Any]) -> None:
    owner = get_user_model().objects.create_user("wang", password="x", email="wang@example.com")
    rule = AlertRule.objects.create(
        owner=owner,
        name="r",
        condition="folded",
        language="zh-hans",
        email_to="wang@example.com",
        webhook_format="slack",
    )
    firing = AlertFiring.objects.create(
        fired_at=timezone.now(),
        rule=rule,
        home="local",
        session_id="s1",
        title="t",
        key="9",
        summary="自动折叠：1 → 2 tokens",
    )
    slack = json.loads(deliveries.webhook_body(rule, firing))["text"]
    assert "|打开会话>" in slack
    deliveries.send_email(rule, firing)
    body = mailoutbox[-1].body
    assert "会话：" in body and "规则：r（发生了一次折叠）" in body
    rule.language = "en"
    assert "|Open the session>" in json.loads(deliveries.webhook_body(rule, firing))["text"]
