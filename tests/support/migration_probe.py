"""Run inside ``manage.py shell`` (tests/site/test_migrations.py): make a database with the
migrations dshweb had before its models moved to the feature apps, put rows in every
table, migrate to today's layout, and print what today's models read back (JSON)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("dashboard", "0007_api_tokens"), ("live", "0005_alerts")]
"""The last migrations of the two apps that held every model."""

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _old_rows(apps: Any) -> None:
    """One row (or two) in every table, through the models as they were."""
    user = apps.get_model("auth", "User").objects.create(username="carol", password="!")
    types = apps.get_model("contenttypes", "ContentType").objects
    requests_type = types.create(app_label="dashboard", model="compactionrequest")
    compact = apps.get_model("auth", "Permission").objects.create(
        codename="compact", name="Can ask DSH to compact a session", content_type=requests_type
    )
    user.user_permissions.add(compact)

    def model(name: str) -> Any:
        return apps.get_model(*name.split("."))

    first = model("dashboard.PatchRevision").objects.create(
        home="h", profile="sdk", path="p.yaml", section="s", user=user, after="a: 1\n"
    )
    model("dashboard.PatchRevision").objects.create(
        home="h", profile="sdk", path="p.yaml", section="s", after="a: 2\n", restored_from=first
    )
    model("dashboard.DshWebSetting").objects.create(mode="url", launch_url="http://x/?token=t")
    model("dashboard.CompactionRequest").objects.create(home="h", session_id="s-1", user=user)
    model("dashboard.ApiToken").objects.create(user=user, name="ci", prefix="dshweb_ab", digest="d")
    model("live.FoldCheckpoint").objects.create(home="h", folder="f", blob=b"\x00ck", saved_at=NOW)
    model("live.CollectorLease").objects.create(
        name="h",
        path="/h",
        host="m",
        pid=1,
        token="t",
        started_at=NOW,
        heartbeat_at=NOW,
        heartbeat_every=2.0,
        version=7,
    )
    model("live.CollectedSession").objects.create(
        home="h", session_id="s-1", version=7, blob=b"\x01row", updated_at=NOW
    )
    rule = model("live.AlertRule").objects.create(
        owner=user, name="tight", condition="band", webhook_secret="k"
    )
    firing = model("live.AlertFiring").objects.create(
        rule=rule, home="h", session_id="s-1", key="on", summary="tight", fired_at=NOW
    )
    model("live.AlertDelivery").objects.create(firing=firing, channel="webhook", attempts=2)


def _new_rows() -> dict[str, Any]:
    from django.contrib.auth.models import Permission, User

    from dshweb.accounts.models import ApiToken
    from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule
    from dshweb.collect.models import CollectedSession, CollectorLease, FoldCheckpoint
    from dshweb.compaction.models import CompactionRequest, DshWebSetting
    from dshweb.profiles.models import PatchRevision

    carol = User.objects.get(username="carol")
    revisions = list(PatchRevision.objects.order_by("id"))
    delivery = AlertDelivery.objects.get()
    return {
        "revisions": [r.after for r in revisions],
        "restoredFrom": revisions[1].restored_from_id == revisions[0].id,
        "revisionUser": revisions[0].user_id == carol.id,
        "engine": DshWebSetting.objects.get().launch_url,
        "request": CompactionRequest.objects.get().user_id == carol.id,
        "token": ApiToken.objects.get().user_id == carol.id,
        "checkpoint": bytes(FoldCheckpoint.objects.get().blob).hex(),
        "leaseVersion": CollectorLease.objects.get().version,
        "collected": bytes(CollectedSession.objects.get().blob).hex(),
        "chain": [delivery.firing.rule.owner_id == carol.id, delivery.attempts],
        "rules": AlertRule.objects.count(),
        "firings": AlertFiring.objects.count(),
        "canCompact": carol.has_perm("compaction.compact"),
        "compactPermissions": Permission.objects.filter(codename="compact").count(),
    }


def main() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    executor.loader.build_graph()
    _old_rows(executor.loader.project_state(BEFORE).apps)
    call_command("migrate", verbosity=0)  # today's migrations, and post_migrate's work
    print(json.dumps(_new_rows()))
