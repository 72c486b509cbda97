"""The demo's alert rule: on the demo home, each administrator who has no rule is given
one that fires when a session's context gets tight, so the demo shows an alert firing
(the replayed session climbs to tight in every loop).

Given once per demo home, when a process first starts its services on a copy of it: a
mark in that copy (:data:`MARK`) says it was done, so a rule deleted stays deleted. Never
on a real DSH home, nor in a collector or a web worker (their home is no demo).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import translation
from django.utils.translation import gettext as _

from dshweb.alerts.forms import new_secret
from dshweb.alerts.models import AlertRule
from dshweb.core.alerts.conditions import Condition, ScopeKind
from dshweb.core.fold.gauge import Band
from dshweb.live.service import collecting, own_home

log = logging.getLogger(__name__)

MARK = ".dshweb-demo-alert-rules"
"""The file in the demo home's copy that says its administrators were given their rule."""


def give_demo_rules() -> list[AlertRule]:
    """On the demo home, not done for it yet: a rule for each active administrator who
    has none; the rules made."""
    if not collecting():
        return []
    home = own_home()
    mark = home.path / MARK
    if not home.is_demo or mark.exists():
        return []
    admins = get_user_model().objects.filter(is_superuser=True, is_active=True)
    made: list[AlertRule] = []
    with translation.override(settings.LANGUAGE_CODE):
        for admin in admins.filter(alert_rules__isnull=True):
            made.append(
                AlertRule.objects.create(
                    owner=admin,
                    name=_("Demo: a session's context gets tight"),
                    condition=Condition.BAND.value,
                    band=Band.TIGHT.value,
                    scope=ScopeKind.ALL.value,
                    notify_browser=True,
                    webhook_secret=new_secret(),
                    language=settings.LANGUAGE_CODE,
                )
            )
    mark.write_text("dshweb gave this demo home's administrators an alert rule\n", "utf-8")
    for rule in made:
        log.info("demo home: alert rule %r given to %s", rule.name, rule.owner)
    return made
