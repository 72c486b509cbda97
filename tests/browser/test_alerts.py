"""Alerts in real Chromium: a rule made in the browser fires when frames appended to a
real log fold the session, and the page, in the background, shows it as a notice and as
a system notification (notification permission granted to the context)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Playwright, expect
from pytest_playwright.pytest_playwright import CreateContextCallback

from dshweb.core.fold.index import HomeIndex
from tests.browser.conftest import WAIT_MS, whole_chromium
from tests.conftest import FIXTURE_HOMES
from tests.support.alert_receivers import wait_for_first_look
from tests.support.homes import append_frames, copy_session, fixture_log
from tests.support.logbuilder import frames_of
from tests.support.server import DshwebServer, serving

pytestmark = pytest.mark.browser

SESSION = "auto-compact"
SPY = """
window.__notified = [];
const Real = window.Notification;
class Spy extends Real {
  constructor(title, options) {
    super(title, options);
    window.__notified.push({ title, body: options.body, tag: options.tag });
  }
}
Object.defineProperty(Spy, "permission", { get: () => Real.permission });
Spy.requestPermission = (...args) => Real.requestPermission(...args);
window.Notification = Spy;
"""
"""Records each system notification the page makes, and still makes it."""


@dataclass(frozen=True, slots=True)
class AlertHome:
    path: Path
    log: Path
    rest: list[bytes]
    compactions_to_come: int
    done_after: list[int]
    """Beside each of ``rest``, the folds ended well once it is appended (from the cut)."""


@pytest.fixture(scope="module")
def alert_home(tmp_path_factory: pytest.TempPathFactory) -> AlertHome:
    path = tmp_path_factory.mktemp("alerts") / "home"
    (path / "sessions").mkdir(parents=True)
    shutil.copytree(FIXTURE_HOMES / SESSION / "profiles", path / "profiles")
    source = fixture_log(SESSION)
    frames = frames_of(source.path)
    cut = len(frames) // 3
    log = copy_session(path, source, frames=cut)
    index = HomeIndex(path)
    index.refresh()
    (tracker,) = index.trackers.values()
    before = len(tracker.ledger.compactions)
    whole = HomeIndex(FIXTURE_HOMES / SESSION)
    whole.refresh()
    (complete,) = whole.trackers.values()
    scratch = tmp_path_factory.mktemp("alerts-scratch") / "home"
    (scratch / "sessions").mkdir(parents=True)
    scratch_log = copy_session(scratch, source, frames=cut)
    growing = HomeIndex(scratch)
    growing.refresh()
    (tracker,) = growing.trackers.values()
    done_after = []
    for frame in frames[cut:]:
        append_frames(scratch_log, [frame])
        growing.refresh()
        compactions = tracker.ledger.compactions[before:]
        done_after.append(sum(compaction.status == "done" for compaction in compactions))
    return AlertHome(path, log, frames[cut:], len(complete.ledger.compactions) - before, done_after)


@pytest.fixture(scope="module")
def browser(playwright: Playwright, browser_type_launch_args: dict[str, Any]) -> Iterator[Browser]:
    """The whole Chromium: the headless shell makes no system notification."""
    yield from whole_chromium(playwright, browser_type_launch_args)


@pytest.fixture(scope="module")
def server(
    alert_home: AlertHome, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DshwebServer]:
    yield from serving(DshwebServer(alert_home.path, tmp_path_factory.mktemp("alerts-data")))


def test_a_rule_made_here_notifies_a_background_tab_when_the_session_folds(
    new_context: CreateContextCallback,
    alert_home: AlertHome,
    server: DshwebServer,
    artifacts: Path,
) -> None:
    assert alert_home.compactions_to_come >= 1
    context = new_context(permissions=["notifications"])
    context.add_init_script(SPY)
    page = context.new_page()

    page.goto("/alerts/new/")
    page.fill("#id_name", "folds")
    expect(page.locator("#id_band")).to_be_visible()  # a new rule starts as a band rule
    page.select_option("#id_condition", "folded")
    # The server sends the form again with the fields a "folded" rule uses: no band, no
    # steps; what was typed is kept.
    expect(page.locator("#alert-form")).to_have_attribute("data-condition", "folded")
    expect(page.locator("#id_band")).to_be_hidden()
    expect(page.locator("#id_name")).to_have_value("folds")
    page.fill("#id_cooldown_seconds", "0")
    expect(page.locator("#id_notify_browser")).to_be_checked()
    page.click("#alert-save")
    expect(page.locator(".message")).to_have_text("Alert rule “folds” made.")

    page.goto(f"/homes/local/sessions/{SESSION}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    # The permission is granted: no button asks for it.
    expect(page.locator("#notify-permission")).to_be_hidden()
    other = context.new_page()
    other.goto("/alerts/")
    other.bring_to_front()  # the session's page is now a background tab
    # The watcher's first look at the new rule: the folds so far are old to it.
    wait_for_first_look(server.output, rules=1)

    notices = page.locator("#alert-toasts .alert-toast")
    shown = 0
    # As DSH writes them, each fold a moment apart: a fold's notice is awaited before the
    # next fold's frames (a hub pass that takes two folds at once notifies the newest).
    for frame, done in zip(alert_home.rest, alert_home.done_after, strict=True):
        append_frames(alert_home.log, [frame])
        if done > shown:
            shown = done
            expect(notices).to_have_count(shown, timeout=WAIT_MS)
        time.sleep(0.005)
    expect(notices).to_have_count(alert_home.compactions_to_come, timeout=WAIT_MS)
    expect(notices.first.locator("strong")).to_contain_text("folds: ")
    notified = page.evaluate("window.__notified")
    assert len(notified) == alert_home.compactions_to_come
    assert all(n["title"].startswith("folds: ") for n in notified)
    assert all(n["body"].startswith("automatic compaction: ") for n in notified)
    assert len({n["tag"] for n in notified}) == len(notified)  # one per firing
    page.screenshot(path=artifacts / "alert-notice.png")

    other.reload()
    firings = other.locator("#alert-firings > li")
    expect(firings).to_have_count(alert_home.compactions_to_come)
    expect(firings.first.locator('[data-channel="browser"]')).to_have_attribute(
        "data-state", "sent"
    )
    notices.first.locator("[data-dismiss-alert]").click()
    expect(notices).to_have_count(alert_home.compactions_to_come - 1)


def test_a_condition_chosen_before_the_name_shows_its_own_fields(
    new_context: CreateContextCallback,
) -> None:
    """Name is required, and still empty when the condition changes: the form comes back
    with that condition's fields all the same (the request that asks for them checks
    nothing), and the rule saved holds the values the page showed."""
    page = new_context().new_page()
    page.goto("/alerts/new/")
    expect(page.locator("#id_name")).to_have_value("")
    page.select_option("#id_condition", "fold-soon")
    expect(page.locator("#alert-form")).to_have_attribute("data-condition", "fold-soon")
    steps = page.locator("#id_steps")
    expect(steps).to_be_visible()
    expect(steps).to_have_value("3")
    expect(page.locator("#id_band")).to_be_hidden()
    steps.fill("7")
    page.select_option("#id_scope", "folder")
    expect(page.locator("#id_folder")).to_be_visible()
    expect(steps).to_have_value("7")  # kept as typed
    page.fill("#id_folder", "/home/me/app")
    page.fill("#id_name", "soon")
    page.click("#alert-save")
    expect(page.locator(".message")).to_have_text("Alert rule “soon” made.")
    expect(page.locator("#id_condition")).to_have_value("fold-soon")
    expect(page.locator("#id_steps")).to_have_value("7")
    expect(page.locator("#id_folder")).to_have_value("/home/me/app")
