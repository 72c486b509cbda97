"""A fold seen before it happens, in real Chromium: the session page shows what the next
automatic fold would take away; when the fold lands (real DSH frames appended), its ledger
row shows that preview beside what the engine did, equal. The settings form replays a
session as ``thresholdRatio`` changes, without a reload and without a script error.

Its own home and server: ``pace-steady`` (real DSH output) cut just before a fold.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dshweb.core.fold.replay import record_log, replay
from dshweb.core.log.home import session_logs
from dshweb.core.profile.effective import EngineConfig
from tests.browser.conftest import WAIT_MS, SameDocument
from tests.support.homes import CutHome
from tests.support.server import DshwebServer, serving

pytestmark = pytest.mark.browser

SESSION = "pace-steady"
COMPACTION = 3
"""The automatic fold the page sees coming (its ``compaction/start`` is cut off)."""


@pytest.fixture(scope="module")
def compaction_home(tmp_path_factory: pytest.TempPathFactory) -> CutHome:
    return CutHome(tmp_path_factory.mktemp("fold-preview"), SESSION, COMPACTION)


@pytest.fixture(scope="module")
def server(
    compaction_home: CutHome, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DshwebServer]:
    yield from serving(DshwebServer(compaction_home.path, tmp_path_factory.mktemp("fold-data")))


def test_the_preview_stands_and_the_ledger_shows_it_beside_the_engines_compaction(
    page: Page, compaction_home: CutHome, artifacts: Path
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"/homes/local/sessions/{SESSION}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    preview = page.locator("#fold-preview")
    expect(preview).to_be_visible()
    said = {
        key: preview.get_attribute(f"data-{key}")
        for key in ("from-seq", "to-seq", "shadowed-tokens")
    }
    assert all(said.values()), said
    expect(page.locator("#ledger")).to_have_attribute("data-folds", str(COMPACTION - 1))
    same = SameDocument(page)

    compaction_home.grow()  # the fold lands, and the steps after it

    expect(page.locator("#ledger")).to_have_attribute(
        "data-folds", str(_compactions(compaction_home)), timeout=WAIT_MS
    )
    row = page.locator(
        f'#ledger tr[data-kind="automatic"][data-previewed-from="{said["from-seq"]}"]'
    )
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-previewed-to", str(said["to-seq"]))
    expect(row).to_have_attribute("data-previewed-tokens", str(said["shadowed-tokens"]))
    expect(row).to_have_attribute("data-shadowed-from", str(said["from-seq"]))
    expect(row).to_have_attribute("data-shadowed-to", str(said["to-seq"]))
    expect(row).to_have_attribute("data-as-previewed", "yes")
    same.check()
    assert not errors, errors
    page.screenshot(path=artifacts / "fold-preview.png", full_page=True)


def _compactions(compaction_home: CutHome) -> int:
    (log,) = session_logs(compaction_home.path)
    return len(record_log(log).acted)


def test_the_settings_form_replays_the_session_as_the_ratio_changes(
    page: Page, compaction_home: CutHome
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto("/settings/sdk/compaction-basic/")
    replayed = page.locator("#replay")
    expect(replayed).to_have_attribute("data-threshold", "12000")
    (log,) = session_logs(compaction_home.path)
    lower = replay(
        record_log(log), EngineConfig(threshold_ratio=0.4, headroom_tokens=1000, retain_ratio=0.1)
    )
    same = SameDocument(page)
    page.fill("#id_thresholdRatio", "0.4")
    expect(replayed).to_have_attribute("data-threshold", "9600", timeout=WAIT_MS)
    expect(replayed).to_have_attribute("data-folds", str(len(lower.automatic)))
    steps = page.locator("#replay-folds tbody tr").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.step))"
    )
    assert steps == list(lower.automatic)
    same.check()
    assert not errors, errors
