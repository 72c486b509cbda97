"""Everything starts with the server, not with the first request (issue 49): a real
``dshweb serve`` that no one asks anything folds its home and sends the webhook of an
alert rule whose condition holds (a receiver on 127.0.0.1), within the alert watcher's
round. Only once the webhook has come does the test ask the server anything: that it is
live and ready, and how long ago its hub and its watcher went round (``/metrics``)."""

from __future__ import annotations

import re
import shutil
import time
import urllib.request
from pathlib import Path

from tests.conftest import FIXTURE_HOMES
from tests.support.alert_receivers import wait_for, webhook_receiver
from tests.support.server import DshwebServer, ServerError

SECRET = "w" * 64
TOKEN = "metrics-token-for-tests-only"
HOME = "many-prunes"
"""A fixture home whose one session ends in the critical band."""
WITHIN = 30.0
"""From the process's start (bootstrap, static files, Daphne, the first round) to the
webhook, on a loaded machine (measured: about 4 s)."""
RULE = f"""
from datetime import datetime, timezone
from django.contrib.auth import get_user_model
from dshweb.alerts.models import AlertRule
owner = get_user_model().objects.create_user("night", password="pw-for-tests-only")
rule = AlertRule.objects.create(owner=owner, name="night-watch", condition="band", band="tight",
    cooldown_seconds=0, notify_browser=False, webhook_url=HOOK, webhook_secret={SECRET!r})
# Saved long before the session's last activity: what the session reached is news to it.
AlertRule.objects.filter(pk=rule.pk).update(updated_at=datetime(2020, 1, 1, tzinfo=timezone.utc))
"""


def _get(server: DshwebServer, path: str, **headers: str) -> tuple[int, str]:
    request = urllib.request.Request(server.url + path, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as reply:
        return reply.status, reply.read().decode()


def test_dshweb_serve_sends_an_alert_with_no_request_made(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / HOME, home)
    with webhook_receiver(lambda: SECRET) as hook:
        env = {"DSHWEB_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "DSHWEB_METRICS_TOKEN": TOKEN}
        server = DshwebServer(home=home, data_dir=tmp_path / "data", extra_env=env)
        server.as_dshweb_serve()
        try:
            server.prepare()
            server.manage("shell", "-c", f"HOOK = {hook.url!r}\n" + RULE)
            server.start(wait=False)  # and no request of any kind until the webhook came
            wait_for(lambda: hook.received, WITHIN)
            came = time.monotonic() - server.started_at
            said = server.output()
            print(f"the webhook came {came:.2f} s after the process started")
            (received,) = hook.received
            assert received.signature_ok
            assert received.body["rule"]["name"] == "night-watch"
            assert "services started by the server's start" in said
            assert "services started by the first call" not in said
            # Now asked: live and ready, and both went round a moment ago.
            assert _get(server, "/healthz") == (200, "ok\n")
            assert _get(server, "/readyz") == (200, "ready\n")
            _, metrics = _get(server, "/metrics", Authorization=f"Bearer {TOKEN}")
        except ServerError as error:
            raise AssertionError(str(error)) from None
        finally:
            server.stop()
    ages = dict(
        re.findall(
            r'^(dshweb_(?:hub|alert_watcher)_last_round_age_seconds)\{home="local"\} (\S+)$',
            metrics,
            re.M,
        )
    )
    assert set(ages) == {
        "dshweb_hub_last_round_age_seconds",
        "dshweb_alert_watcher_last_round_age_seconds",
    }, metrics
    # The hub goes round every second, the watcher at least every second while it works.
    assert all(0 <= float(age) < 5 for age in ages.values()), ages
