"""Settings in the browser: the preview follows the form, a save writes one row, the
history restores the file as it was, and an invalid value writes nothing.

Each test edits its own copy of the fixture profile (``profiles/<name>/`` in the shared
home, removed afterwards), so the ``sdk`` profile the server reads stays as it is.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dshweb.core.fold.index import HomeIndex
from dshweb.core.log.home import session_logs
from dshweb.core.settings.occupancy.line import OccupancyLine, line_input, occupancy_line
from dshweb.core.settings.occupancy.line_settings import LineSettings
from dshweb.core.settings.patchfile import read_patch, row_config
from tests.browser.conftest import PROFILES_FROM, BrowserHome, SameDocument
from tests.conftest import FIXTURE_HOMES
from tests.support.homes import PROFILE
from tests.support.server import DshwebServer

pytestmark = pytest.mark.browser

SESSION = "manual-compact"
"""A session no other browser test changes, shown in the preview."""
COMMENT = "# Tuned by hand for the browser test: keep this comment."

Profile = Callable[[str], Path]


@pytest.fixture
def profile(home: BrowserHome) -> Iterator[Profile]:
    """Copy the fixture profile to ``profiles/<name>/`` with a hand-written comment in its
    patch file; returns that file. The copies are removed at teardown."""
    made: list[Path] = []

    def make(name: str) -> Path:
        folder = home.path / "profiles" / name
        shutil.copytree(FIXTURE_HOMES / PROFILES_FROM / "profiles" / "sdk", folder)
        made.append(folder)
        patch = folder / "cordis.patch.yml"
        text = patch.read_text(encoding="utf-8")
        assert "thresholdRatio: 0.5\n" in text
        text = text.replace("thresholdRatio: 0.5\n", "thresholdRatio: 0.5   # compact early\n")
        patch.write_bytes(f"{COMMENT}\n{text}".encode())
        return patch

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def _expected(home: BrowserHome, **config: object) -> OccupancyLine:
    """The line dshweb's core renders for ``SESSION`` under ``config``."""
    (folder,) = (
        log.session_dir for log in session_logs(home.path) if log.session_dir.name == SESSION
    )
    index = HomeIndex(home.path, profile=PROFILE)
    index.refresh([folder])
    snapshot = index.snapshot(folder)
    return occupancy_line(line_input(snapshot), LineSettings.from_config(config))


def _line(page: Page) -> tuple[str, str]:
    """The preview's line and band, read in one script run."""
    text, band = page.eval_on_selector(
        "#occupancy-line", "line => [line.textContent, line.dataset.band]"
    )
    return str(text), str(band)


def test_preview_save_history_restore(
    page: Page, server: DshwebServer, home: BrowserHome, profile: Profile, artifacts: Path
) -> None:
    english, chinese = _expected(home), _expected(home, language="zh")
    coarser = _expected(home, language="zh", quantumPercent=10)
    assert len({english.text, chinese.text, coarser.text}) == 3
    patch = profile("sdkcopy")
    original = patch.read_bytes()
    page.goto("/settings/sdkcopy/context-truth/")
    expect(page.locator("#settings-form")).to_be_visible()
    expect(page.locator("#id_language")).to_have_value("en")
    same = SameDocument(page)

    page.select_option("#preview-session", SESSION)

    line = page.locator("#occupancy-line")
    # The form opens on the most recent session's line: wait for the chosen one's.
    expect(line).to_have_text(english.text)
    assert _line(page) == (english.text, english.band.value)
    assert english.text.startswith("Context occupancy"), english.text

    page.select_option("#id_language", "zh")

    expect(line).to_have_text(chinese.text)
    expect(line).to_have_attribute("lang", "zh")
    assert _line(page) == (chinese.text, chinese.band.value)
    assert "上下文" in chinese.text, chinese.text

    quantum = page.locator("#id_quantumPercent")
    quantum.select_text()
    quantum.press_sequentially("10")  # typed: the input event, debounced

    expect(line).to_have_text(coarser.text)
    assert _line(page) == (coarser.text, coarser.band.value)
    same.check()
    assert patch.read_bytes() == original  # the preview writes nothing
    page.screenshot(path=artifacts / "settings.png", full_page=True)
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=artifacts / "settings-dark.png", full_page=True)
    page.emulate_media(color_scheme="light")

    page.click("#save")

    expect(page.locator(".messages .message.success")).to_contain_text(
        "Saved context-truth in profiles/sdkcopy/cordis.patch.yml"
    )
    expect(page.locator("#id_language")).to_have_value("zh")
    expect(quantum).to_have_value("10")
    saved = patch.read_text(encoding="utf-8")
    assert row_config(read_patch(patch), "context-truth") == {
        "language": "zh",
        "quantumPercent": 10,
    }
    assert saved.startswith(original.decode()), "bytes before the new row changed"
    assert COMMENT in saved and "thresholdRatio: 0.5   # compact early" in saved

    page.locator("#settings-form").get_by_role("link", name="history").click()

    expect(page).to_have_url(re.compile(r"/settings/sdkcopy/history/$"))
    revisions = page.locator("#history .revision")
    expect(revisions).to_have_count(1)
    saving = revisions.first
    expect(saving).to_have_attribute("data-action", "save")
    diff = saving.locator("pre.diff")
    expect(diff).to_contain_text(re.compile(r"^\+\s+language: zh$", re.M))
    expect(diff).to_contain_text(re.compile(r"^\+\s+quantumPercent: 10$", re.M))
    page.screenshot(path=artifacts / "settings-history.png", full_page=True)

    saving.get_by_role("button", name="Restore the file before it").click()

    expect(page.locator(".messages .message.success")).to_contain_text("Restored")
    expect(revisions).to_have_count(2)
    expect(revisions.first).to_have_attribute("data-action", "restore")
    expect(revisions.first.locator("pre.diff")).to_contain_text(
        re.compile(r"^-\s+language: zh$", re.M)
    )
    assert patch.read_bytes() == original
    page.screenshot(path=artifacts / "settings-history-restored.png", full_page=True)
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=artifacts / "settings-history-dark.png", full_page=True)


def test_invalid_value_shows_the_error_and_writes_nothing(
    page: Page, server: DshwebServer, profile: Profile, artifacts: Path
) -> None:
    patch = profile("sdkbad")
    original = patch.read_bytes()
    page.goto("/settings/sdkbad/context-truth/")
    page.fill("#id_moderateAt", "0.9")
    page.fill("#id_tightAt", "0.8")

    page.click("#save")

    expect(page.locator("#form-errors")).to_contain_text("moderateAt must be below tightAt")
    expect(page.locator(".messages .message.success")).to_have_count(0)
    expect(page.locator("#id_moderateAt")).to_have_value("0.9")
    page.screenshot(path=artifacts / "settings-invalid.png", full_page=True)
    assert patch.read_bytes() == original
    page.goto("/settings/sdkbad/history/")
    expect(page.locator("#history .revision")).to_have_count(0)
    expect(page.locator(".empty")).to_contain_text("No save through dshweb yet")
