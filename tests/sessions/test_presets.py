"""Each session's own profile and agent preset give its compaction point: the
``web-presets`` fixture ran two sessions in ``dsh web``, one under ``standard`` and one
under ``minimal``, whose engines the web profile's own patch file sets apart (points
12,000 and 9,600 under the small window); ``DSHWEB_PROFILE`` (sdk) says nothing of them.
The page, the API and ``dsh_snapshot`` say which profile and preset gave the point."""

from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from dshweb.core.fold.index import HomeIndex
from dshweb.core.profile.effective import SettingsSource
from tests.api.test_v1 import signed_in
from tests.conftest import FIXTURE_HOMES
from tests.support.snapshots import data_attributes, squeezed

POINTS = {"standard": 12_000, "minimal": 9_600}
HOME = FIXTURE_HOMES / "web-presets"


@pytest.fixture
def home(tmp_path: Path, settings: Any, fresh_hub: None) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(HOME, copy, ignore=shutil.ignore_patterns("checkpoints.json"))
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": copy, "DEMO": False, "PROFILE": "sdk"}
    return copy


def test_each_session_goes_by_its_presets_point_and_the_engine_agrees() -> None:
    index = HomeIndex(HOME, profile="sdk")
    index.refresh()
    shots = {s.session_id: s for s in index.snapshots()}
    assert set(shots) == {f"web-presets-{p}" for p in POINTS}
    for preset, point in POINTS.items():
        shot = shots[f"web-presets-{preset}"]
        assert shot.source == SettingsSource("web", preset)
        assert shot.point is not None and shot.point.threshold_tokens == point
        assert shot.threshold_source == "profile" and shot.threshold == point
        # What the engine did in each session holds its own preset's point only.
        assert shot.inferred.holds(point) and shot.ledger.summaries >= 1
        other = next(p for name, p in POINTS.items() if name != preset)
        assert not shot.inferred.holds(other)


def test_without_the_web_profile_the_sessions_fall_back_to_dshweb_profile(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "home"
    shutil.copytree(HOME, copy)
    shutil.rmtree(copy / "profiles" / "web")
    index = HomeIndex(copy, profile="sdk")
    index.refresh()
    for shot in index.snapshots():
        assert shot.source == SettingsSource("sdk", None)


@pytest.mark.django_db
def test_the_page_the_api_and_dsh_snapshot_name_the_preset(home: Path) -> None:
    client, _ = signed_in()
    out = StringIO()
    call_command("dsh_snapshot", "--home", str(home), "--json", stdout=out)
    listed = {s["sessionId"]: s for s in json.loads(out.getvalue())}
    for preset, point in POINTS.items():
        session_id = f"web-presets-{preset}"
        page = client.get(f"/homes/local/sessions/{session_id}/").content.decode()
        assert f'data-threshold="{point}"' in page
        said = data_attributes(page, "settings-from")
        assert (said["data-profile"], said["data-preset"]) == ("web", preset)
        assert f'agent preset <code translate="no">{preset}</code>' in squeezed(page)
        api = json.loads(client.get(f"/api/v1/homes/local/sessions/{session_id}").content)
        assert api["thresholdTokens"] == point
        assert api["compaction"]["settingsFrom"] == {"profile": "web", "preset": preset}
        shot = listed[session_id]
        assert shot["thresholdTokens"] == point
        assert shot["compaction"]["settingsFrom"] == {"profile": "web", "preset": preset}
