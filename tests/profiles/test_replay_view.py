"""The settings replay on the compaction and pruner pages: a session's recorded growth
replayed under the settings as typed, beside what it really did (the figures of
:mod:`dshweb.core.fold.replay`, checked against the real runtime in
``tests/core/fold/test_replay.py``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from dshweb.core.fold.replay import record_log, replay
from dshweb.core.log.home import session_logs
from dshweb.core.profile.effective import EngineConfig
from dshweb.core.profile.pruner import DEFAULT_CUT, PruneCut
from tests.conftest import FIXTURE_HOMES
from tests.profiles.test_views import _form_data, staff  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

ENGINE_PAGE = "/settings/sdk/compaction-basic/"
PRUNER_PAGE = "/settings/sdk/tool-result-pruner/"
ENGINE = EngineConfig(threshold_ratio=0.5, headroom_tokens=1000, retain_ratio=0.1)
"""pace-mixed's engine (its profile's patch)."""
LOWER = PruneCut(4000, 1500, 500)
"""A cut that prunes the session's results of 4,000 to 8,192 code points (18 of its 37)."""


@pytest.fixture
def home(tmp_path: Path, settings: Any) -> Path:
    target = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "pace-mixed", target)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": target, "DEMO": False, "PROFILE": "sdk"}
    return target


def _replay_attrs(page: str) -> dict[str, str]:
    tag = re.search(r'<aside[^>]*\bid="replay"[^>]*>', page, re.S)
    assert tag is not None, page[:2000]
    return dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', tag.group(0)))


def _replayed(staff: Client, *, pruner: str = "", **changes: object) -> str:  # noqa: F811
    """The replay of ``pace-mixed`` the engine page's form asks for with ``changes``."""
    data = _form_data(staff, ENGINE_PAGE, **changes)
    data.update(session="pace-mixed", pruner=pruner)
    return str(staff.post(f"{ENGINE_PAGE}replay/", data).content.decode())


def test_the_engine_page_opens_with_the_replay_of_the_latest_session(
    home: Path,
    staff: Client,  # noqa: F811
) -> None:
    page = staff.get(ENGINE_PAGE).content.decode()
    attrs = _replay_attrs(page)
    (log,) = session_logs(home)
    recording = record_log(log)
    # Under its own settings the replay folds where the session did.
    assert attrs["data-folds"] == attrs["data-real-folds"] == str(len(recording.acted))
    assert attrs["data-threshold"] == "12000"
    assert 'id="replay-session"' in page and 'hx-target="#replay"' in page


def test_changing_threshold_ratio_replays_the_session_under_it(
    home: Path,
    staff: Client,  # noqa: F811
) -> None:
    page = _replayed(staff, thresholdRatio=0.4)
    attrs = _replay_attrs(page)
    (log,) = session_logs(home)
    recording = record_log(log)
    said = replay(
        recording, EngineConfig(threshold_ratio=0.4, headroom_tokens=1000, retain_ratio=0.1)
    )
    assert attrs["data-threshold"] == "9600"
    assert attrs["data-folds"] == str(len(said.automatic))
    assert len(said.automatic) > len(recording.acted)  # a lower point folds more often
    steps = re.findall(r'<tr data-step="(\d+)" data-kind="(\w+)"', page)
    assert [int(step) for step, _ in steps] == list(said.automatic)
    # The pruner off: the 1,500-line result is no longer cut first, and stays in the
    # tail the summary keeps; what is left before it is too small to summarise.
    off = _replayed(staff, thresholdRatio=0.4, pruner="off")
    assert 'data-kind="failed"' not in page and 'data-kind="failed"' in off


def test_invalid_settings_say_so_and_replay_nothing(
    home: Path,
    staff: Client,  # noqa: F811
) -> None:
    page = _replayed(staff, thresholdRatio=7)
    assert "data-folds" not in page and "Fix the settings to see the replay." in page


def test_only_staff_may_replay(home: Path) -> None:
    response = Client().post(f"{ENGINE_PAGE}replay/", {"session": "pace-mixed"})
    assert response.status_code in (302, 403)


def _cut_of(page: str) -> PruneCut | None:
    found = re.search(r'<p[^>]*\bid="replay-cut"[^>]*>', page)
    assert found is not None, page[:2000]
    attrs = dict(re.findall(r'data-([a-z-]+)="(\d+)"', found.group(0)))
    if not attrs:
        return None
    return PruneCut(
        int(attrs["threshold-chars"]), int(attrs["head-chars"]), int(attrs["tail-chars"])
    )


def _passes(page: str) -> list[tuple[int, str]]:
    return [
        (int(step), kind)
        for step, kind in re.findall(r'<tr data-step="(\d+)" data-kind="(\w+)"', page)
    ]


def test_the_replay_prunes_with_the_profiles_cut(
    home: Path,
    staff: Client,  # noqa: F811
) -> None:
    (log,) = session_logs(home)
    default = replay(record_log(log), ENGINE)
    assert _cut_of(_replayed(staff)) == DEFAULT_CUT
    patch = home / "profiles" / "sdk" / "cordis.patch.yml"
    with patch.open("a", encoding="utf-8") as rows:
        rows.write("- id: tool-result-pruner\n  config: " + str(LOWER.as_json()) + "\n")
    page = _replayed(staff)
    assert _cut_of(page) == LOWER
    lowered = replay(record_log(log), ENGINE, pruner=LOWER)
    assert _passes(page) == [(f.check, f.kind) for f in lowered.passes]
    assert _passes(page) != [(f.check, f.kind) for f in default.passes]
    assert "prune" in {f.kind for f in lowered.passes} - {f.kind for f in default.passes}
    # The pruner off in the profile: "as the profile has it" replays none, "on" the
    # pruner's defaults.
    with patch.open("a", encoding="utf-8") as rows:
        rows.write("- id: tool-result-pruner\n  disabled: true\n")
    off = _replayed(staff)
    assert _cut_of(off) is None and "The pruner is off in this replay." in off
    assert _passes(off) == [
        (f.check, f.kind) for f in replay(record_log(log), ENGINE, pruner=None).passes
    ]
    assert _cut_of(_replayed(staff, pruner="on")) == DEFAULT_CUT


def test_the_pruner_page_replays_the_cut_as_typed(
    home: Path,
    staff: Client,  # noqa: F811
) -> None:
    (log,) = session_logs(home)
    opened = staff.get(PRUNER_PAGE).content.decode()
    assert _cut_of(opened) == DEFAULT_CUT  # as the profile has it
    data = _form_data(staff, PRUNER_PAGE, **LOWER.as_json())
    data.update(session="pace-mixed", pruner="")
    page = staff.post(f"{PRUNER_PAGE}replay/", data).content.decode()
    assert _cut_of(page) == LOWER
    said = replay(record_log(log), ENGINE, pruner=LOWER)
    assert _replay_attrs(page)["data-folds"] == str(len(said.automatic))
    assert _passes(page) == [(f.check, f.kind) for f in said.passes]
    refused = _form_data(staff, PRUNER_PAGE, thresholdChars=100)  # 4,096 + 39 + 1,024 > 100
    refused.update(session="pace-mixed", pruner="")
    shown = staff.post(f"{PRUNER_PAGE}replay/", refused).content.decode()
    assert "data-folds" not in shown and "Fix the settings to see the replay." in shown
