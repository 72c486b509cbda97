"""Fixtures of the browser tests: one DSH home, one real server, real Chromium.

The browser is pytest-playwright's (``browser``, ``new_context``, ``page``), launched from
Debian's Chromium headless shell (:data:`HEADLESS`: Chromium's own headless build, as
Playwright's own headless default is, at about two thirds of the whole browser's CPU); a
module whose pages need the whole browser (system notifications) launches
:data:`CHROMIUM` with :func:`whole_chromium`. The home and the server live for the whole
``tests/browser`` package (a server takes seconds to prepare); a module may override
``server`` with its own. Each test's contexts are signed in with the cookies of one
sign-in through the real login form, per module. Tests that change the home each use
their own session of it, so they do not depend on their order.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, StorageState
from pytest_playwright.pytest_playwright import CreateContextCallback

from dshweb.core.log.home import session_logs
from tests.conftest import FIXTURE_HOMES, REPO
from tests.support.homes import (
    Shown,
    copy_session,
    cut_for_a_visible_change,
    fixture_log,
    shown_after_each_frame,
)
from tests.support.logbuilder import frames_of
from tests.support.server import DshwebServer, serving, sign_in

CHROMIUM = Path(os.environ.get("DSHWEB_CHROMIUM") or "/usr/bin/chromium")
"""The whole browser."""
HEADLESS = Path(
    os.environ.get("DSHWEB_CHROMIUM")
    or os.environ.get("DSHWEB_CHROMIUM_HEADLESS_SHELL")
    or "/usr/bin/chromium-headless-shell"
)
"""The headless shell of the same Chromium (Debian's ``chromium-headless-shell``), for every
page that needs no more; ``DSHWEB_CHROMIUM`` alone names one browser for every test."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO / "test-artifacts"
DESKTOP = {"width": 1280, "height": 900}
WAIT_MS = 10_000
"""Longest wait for a pushed update (the watcher sends one within a fraction of a second)."""

PROFILES_FROM = "auto-compact"
CONTINUED = ("auto-compact", "big-tools")
"""Sessions whose log is cut short: a test appends the rest."""
ALSO_SHOWN = ("cjk-emoji", "fold-failures", "manual-compact", "subagent-parent")
LIVE = "cjk-emoji"
"""The session whose lock the test process holds, so dshweb shows it live."""


@dataclass(frozen=True, slots=True)
class Continuation:
    """A cut log in the home, the frames it lacks, and what the page shows before/after."""

    log: Path
    rest: list[bytes]
    before: Shown
    after: Shown


@dataclass(frozen=True, slots=True)
class BrowserHome:
    path: Path
    continuations: dict[str, Continuation]


@pytest.fixture(scope="package")
def home(tmp_path_factory: pytest.TempPathFactory) -> BrowserHome:
    """A DSH home of real fixture sessions; the ``CONTINUED`` ones cut short."""
    root = tmp_path_factory.mktemp("browser")
    path = root / "home"
    (path / "sessions").mkdir(parents=True)
    shutil.copytree(FIXTURE_HOMES / PROFILES_FROM / "profiles", path / "profiles")
    continuations: dict[str, Continuation] = {}
    for name in CONTINUED:
        log = fixture_log(name)
        shown = shown_after_each_frame(path / "profiles", log, root / f"scratch-{name}")
        cut = cut_for_a_visible_change(shown, at_least=len(shown) // 3)
        target = copy_session(path, log, frames=cut)
        continuations[name] = Continuation(
            target, frames_of(log.path)[cut:], shown[cut - 1], shown[-1]
        )
    for name in ALSO_SHOWN:
        for log in session_logs(FIXTURE_HOMES / name):
            copy_session(path, log)
    return BrowserHome(path, continuations)


@pytest.fixture(scope="package")
def live_session(home: BrowserHome) -> Iterator[str]:
    """Hold ``LIVE``'s session lock as a running DSH would, for the whole package."""
    (lock_path,) = (
        log.session_dir / "session.lock"
        for log in session_logs(home.path)
        if log.session_dir.name == LIVE
    )
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield LIVE
        fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="package")
def server(
    home: BrowserHome, live_session: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DshwebServer]:
    """dshweb on a free port of 127.0.0.1, watching ``home``."""
    yield from serving(DshwebServer(home.path, tmp_path_factory.mktemp("dshweb-data")))


def _launch_args(binary: Path, args: dict[str, Any]) -> dict[str, Any]:
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail(
            f"Chromium not found at {binary}: install it (Debian: apt-get install chromium "
            "chromium-headless-shell), point DSHWEB_CHROMIUM at one, or leave these tests "
            "out with -m 'not browser'",
            pytrace=False,
        )
    return args | {"executable_path": str(binary), "args": CHROMIUM_ARGS, "timeout": 30_000}


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Debian's Chromium headless shell (Playwright's own browser download is never used)."""
    return _launch_args(HEADLESS, browser_type_launch_args)


def whole_chromium(playwright: Playwright, launch_args: dict[str, Any]) -> Iterator[Browser]:
    """Debian's whole Chromium, for a module's ``browser`` fixture: what the headless
    shell lacks (a background tab's system notification) is there."""
    browser = playwright.chromium.launch(**_launch_args(CHROMIUM, launch_args))
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="module")
def signed_in(browser: Browser, server: DshwebServer) -> StorageState:
    """The cookies of one sign-in through the real login form of ``server`` (a module may
    override ``server`` with its own)."""
    return sign_in(browser, server)


@pytest.fixture
def browser_context_args(
    browser_context_args: dict[str, Any], server: DshwebServer, signed_in: StorageState
) -> dict[str, Any]:
    """Every context: signed in to ``server``, light, at the desktop size; a test changes
    that with ``@pytest.mark.browser_context_args(...)``."""
    return browser_context_args | {
        "base_url": server.url,
        "storage_state": signed_in,
        "color_scheme": "light",
        "viewport": DESKTOP,
    }


_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_FAILED] = True
    return report


@pytest.fixture
def new_context(
    new_context: CreateContextCallback, request: pytest.FixtureRequest, server: DshwebServer
) -> Iterator[CreateContextCallback]:
    """pytest-playwright's contexts (``page`` is made in one), each failing the test on an
    uncaught error in its pages.

    When the test failed, each open page is saved to ``test-artifacts/failed-*.png`` and
    the end of the server's output is printed.
    """
    contexts: list[BrowserContext] = []
    errors: list[str] = []

    def make(**options: Any) -> BrowserContext:
        context = new_context(**options)
        context.set_default_timeout(WAIT_MS)
        context.on("weberror", lambda error: errors.append(str(error.error)))
        contexts.append(context)
        return context

    yield cast(CreateContextCallback, make)
    if request.node.stash.get(_FAILED, False):
        _save_failure(request.node.name, contexts, server)
    assert not errors, f"uncaught errors in the page: {errors}"


def _save_failure(name: str, contexts: list[BrowserContext], server: DshwebServer) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    for number, page in enumerate(p for context in contexts for p in context.pages):
        path = ARTIFACTS / f"failed-{name}-{number}.png"
        page.screenshot(path=path, full_page=True)
        print(f"page {page.url} saved to {path}")
    print(server.output(lines=80))


@pytest.fixture(scope="package")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


class SameDocument:
    """Proves a page was not reloaded: a marker on ``window`` and the navigation count.

    With ``new_address=True`` the page may change its address (htmx pushes a history
    entry, a navigation of the frame to Playwright), as long as the document stays."""

    def __init__(self, page: Page, *, new_address: bool = False) -> None:
        self.page = page
        self.new_address = new_address
        self.navigations = 0
        page.on("framenavigated", self._count)
        page.evaluate("window.__dshwebMarker = 'set before the change'")

    def _count(self, frame: Any) -> None:
        if frame == self.page.main_frame:
            self.navigations += 1

    def check(self) -> None:
        assert self.page.evaluate("window.__dshwebMarker") == "set before the change"
        assert self.new_address or self.navigations == 0, "the page navigated"
