"""One compaction point and one band for each session, whoever reads it: the session
page, the JSON API, ``/metrics``, the step export and ``dsh_snapshot --json`` all go by
``dshweb.core.fold.point`` (the profile's point or the one the engine's decisions allow,
the band held at each step boundary). Every fixture session, the inferred ones included,
in its own home (its own profiles: the sdk profile or its web agent preset)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import shutil
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dshweb.api.metrics import BAND_LEVELS
from dshweb.core.log.home import session_logs
from tests.api.test_v1 import signed_in, streamed
from tests.conftest import FIXTURE_HOMES

pytestmark = [pytest.mark.django_db]

TOKEN = "scrape-token-for-tests-only"
HOMES = sorted(p.name for p in FIXTURE_HOMES.iterdir() if (p / "sessions").is_dir())


def _ring(html: str, name: str) -> str:
    found = re.search(rf'id="context-ring"[^>]*?\s{name}="([^"]*)"', html, re.S)
    assert found is not None, name
    return found.group(1)


def _metrics(text: str, session: str) -> dict[str, float]:
    return {
        s.name.removeprefix("dshweb_session_"): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels.get("session") == session
    }


@pytest.mark.parametrize("name", HOMES)
def test_the_five_readers_agree_on_the_point_and_the_band(
    name: str, tmp_path: Path, settings: Any, fresh_hub: None
) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / name, home, ignore=shutil.ignore_patterns("checkpoints.json"))
    settings.DSHWEB = {
        **settings.DSHWEB,
        "DSH_HOME": home,
        "PROFILE": "sdk",
        "METRICS_TOKEN": TOKEN,
    }
    client, _ = signed_in()
    out = StringIO()
    call_command("dsh_snapshot", "--home", str(home), "--json", stdout=out)
    snapshots = {s["sessionId"]: s for s in json.loads(out.getvalue())}
    with contextlib.ExitStack() as held:
        for log in session_logs(home):  # live: /metrics has series for every one
            lock = held.enter_context((log.session_dir / "session.lock").open("a"))
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        scraped = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert scraped.status_code == 200
        metrics = scraped.content.decode()
    checked = 0
    for session_id, snapshot in snapshots.items():
        path = f"homes/local/sessions/{session_id}"
        page = client.get(f"/{path}/").content.decode()
        api = json.loads(client.get(f"/api/v1/{path}").content)
        rows = streamed(client.get(f"/{path}/steps.csv")).decode().splitlines()
        header, last = rows[0].split(","), rows[-1].split(",")
        step = dict(zip(header, last, strict=True)) if len(rows) > 1 else None
        series = _metrics(metrics, session_id)
        threshold, band = snapshot["thresholdTokens"], snapshot["band"]
        said = {
            "dsh_snapshot": (threshold, band),
            "api": (api["thresholdTokens"], api["band"]),
            "page": (int(_ring(page, "data-threshold") or 0) or None, _ring(page, "data-band")),
            "metrics": (
                int(series["threshold_tokens"]) if "threshold_tokens" in series else None,
                next(
                    (b.value for b, n in BAND_LEVELS.items() if n == series.get("band_level")),
                    "unknown",
                ),
            ),
        }
        if step is not None:  # a session that took a step: its last one, as exported
            said["steps.csv"] = (
                int(step["threshold"]) if step["threshold"] else None,
                step["band"],
            )
        assert len(set(said.values())) == 1, (session_id, said)
        source = snapshot["compaction"]["source"]
        inferred = snapshot["compaction"]["inferred"]
        if source == "inferred" and inferred["high"] is not None:
            assert threshold == (inferred["low"] + inferred["high"]) // 2
        checked += 1
    assert checked == len(snapshots) >= 1
