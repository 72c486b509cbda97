"""How the pages look: the theme switch, each theme's colours whatever the system asks,
and every page (each session's, the sessions list, the ledger, settings, alerts, tokens,
the API docs, sign-in) laid out for every screen from a phone's to a wide desktop's."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, ViewportSize, expect
from pytest_playwright.pytest_playwright import CreateContextCallback

from dshweb.core.log.home import session_logs
from tests.browser.conftest import ALSO_SHOWN, CONTINUED, PROFILES_FROM, BrowserHome
from tests.conftest import FIXTURE_HOMES, REPO
from tests.support.server import USERNAME, DshwebServer

pytestmark = pytest.mark.browser

PHONE: ViewportSize = {"width": 390, "height": 844}
THEMED = re.findall(
    r"^\s*(--[\w-]+):\s*light-dark\(",
    (REPO / "dshweb" / "site" / "static" / "dshweb" / "dshweb.css").read_text(encoding="utf-8"),
    re.M,
)
"""The colours that differ between the light and the dark theme."""
PALETTE = """(names) => {
  const probe = document.createElement("div");
  document.body.append(probe);
  const shown = {};
  for (const name of names) {
    probe.style.color = `var(${name})`;
    shown[name] = getComputedStyle(probe).color;
  }
  probe.remove();
  const body = getComputedStyle(document.body);
  shown.page = body.backgroundColor;
  shown.text = body.color;
  return shown;
}"""
"""Each themed colour as the page resolves it, and the page's own background and text."""


def test_theme_switch_sets_and_keeps_the_theme(
    page: Page, server: DshwebServer, artifacts: Path
) -> None:
    page.goto("/homes/local/sessions/auto-compact/")
    root = page.locator("html")
    expect(root).not_to_have_attribute("data-theme", "dark")
    dark = page.locator('#theme-switch [data-theme-choice="dark"]')

    dark.click()

    expect(root).to_have_attribute("data-theme", "dark")
    expect(dark).to_have_attribute("aria-pressed", "true")
    page.screenshot(path=artifacts / "dark.png", full_page=True)
    page.reload()
    expect(root).to_have_attribute("data-theme", "dark")
    page.locator('#theme-switch [data-theme-choice="light"]').click()
    expect(root).to_have_attribute("data-theme", "light")
    page.locator('#theme-switch [data-theme-choice="auto"]').click()
    expect(root).not_to_have_attribute("data-theme", "light")
    assert page.evaluate("document.documentElement.hasAttribute('data-theme')") is False


def test_each_theme_shows_its_colours_whatever_the_system_asks(
    page: Page, server: DshwebServer
) -> None:
    assert len(THEMED) >= 15, THEMED
    page.goto("/homes/local/sessions/auto-compact/")
    shown: dict[tuple[str, str], dict[str, str]] = {}
    for choice in ("auto", "light", "dark"):
        page.locator(f'#theme-switch [data-theme-choice="{choice}"]').click()
        for system in ("light", "dark"):
            page.emulate_media(color_scheme=system)
            shown[choice, system] = page.evaluate(PALETTE, THEMED)

    light, dark = shown["light", "light"], shown["dark", "dark"]
    assert (light["page"], light["text"]) == ("rgb(246, 247, 249)", "rgb(29, 35, 48)")
    assert (dark["page"], dark["text"]) == ("rgb(18, 21, 27)", "rgb(227, 231, 239)")
    alike = [name for name in THEMED if light[name] == dark[name]]
    assert not alike, f"the same in both themes: {alike}"
    # Auto follows the system; a choice holds against it.
    assert shown["auto", "light"] == shown["light", "dark"] == light
    assert shown["auto", "dark"] == shown["dark", "light"] == dark


SCREENS = {
    (1440, 900): "first screen",
    (1280, 720): "first screen",
    (390, 844): "ring",
    (320, 640): "",
    (768, 1024): "",
    (1920, 1080): "",
}
"""Each screen a session page is checked at, and what its first screen must hold."""
FIRST_SCREEN = {
    "ring": "#context-ring svg.ring",
    "band": "#context-ring .band-pill",
    "point": "#ring-point",
    "headroom": "#ring-headroom",
    "forecast": "#forecast",
    "compact": "#compact-button",
    "preview": "#fold-preview-title",
}
"""The headline of a session page: its ring, band, compaction point and the headroom to it,
the fold forecast, the Compact button and the fold preview's title (the point and the
headroom are missing where a session has no automatic compaction point)."""
RING_PX = 100
"""The narrowest the ring may be, at any width."""
BLANK_PX = 40
"""The most a card leaves blank above or below what it holds (beyond its padding): a card is
its own height, not stretched to a neighbour's."""
LAYOUT = (Path(__file__).parent / "layout.js").read_text(encoding="utf-8")
"""A page's layout as it is now, read in one script run (a pushed update may replace a part
between two reads): the page's width, each element seen outside its box (or holding more
than its width), each card with blank space, each box that scrolls sideways (and those
that are not a labelled, focusable region), and where each part of the headline is."""
BOXES = "#site-header, main, main .card, main .notice, main .login, main .session-row"
"""The boxes whose elements must each stay inside the nearest of them around it: the
header, the page's content, and each card (a session's row in the list, the sign-in form
and a notice are cards too)."""


def _layout(page: Page, first: dict[str, str] | None = None) -> dict[str, Any]:
    """``page``'s layout now (``LAYOUT``), with where each of ``first`` is."""
    found: dict[str, Any] = page.evaluate(
        LAYOUT, {"boxes": BOXES, "first": first or {}, "blankPx": BLANK_PX}
    )
    return found


def _box_failures(found: dict[str, Any], width: int) -> list[str]:
    """What a page at ``width`` does wrong: it is wider than the screen, something leaves
    its box, a card is stretched, something scrolls sideways outside a labelled region (or
    at all on a desktop: every column of every table in sight)."""
    failures = [f"the page is {found['page']}px wide"] if found["page"] > width else []
    failures += [f"leaves its box: {said}" for said in found["outside"]]
    failures += [f"stretched: {said}" for said in found["blank"]]
    failures += [f"scrolls unlabelled: {said}" for said in found["unlabelled"]]
    if width >= 1280:
        failures += [f"scrolls sideways: {said}" for said in found["scrolled"]]
    return failures


def _layout_failures(found: dict[str, Any], screen: tuple[int, int], holds: str) -> list[str]:
    width, height = screen
    failures = _box_failures(found, width)
    ring = found["screen"]["ring"]
    if ring is None or ring[2] - ring[0] < RING_PX:
        failures.append(f"the ring is too small to read: {ring}")
    wanted = FIRST_SCREEN if holds == "first screen" else {"ring": ""} if holds else {}
    optional = ("point", "headroom")
    for name in wanted:
        where = found["screen"][name]
        if where is None and name in optional:
            continue
        if where is None or where[0] < 0 or where[1] < 0 or where[2] > width or where[3] > height:
            failures.append(f"{name} not in the first screen: {where}")
    return failures


def _fixture_sessions() -> list[str]:
    """The sessions the package's home copies from the fixtures (a sub-agent's too)."""
    return sorted(
        log.session_dir.name
        for name in (*CONTINUED, *ALSO_SHOWN)
        for log in session_logs(FIXTURE_HOMES / name)
    )


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_every_session_page_fits_every_screen(
    new_context: CreateContextCallback, server: DshwebServer, artifacts: Path, locale: str
) -> None:
    """Every fixture session's page, at every screen from a small phone's to a wide
    desktop's, in both themes: nothing leaves its card nor widens the page, no card is
    stretched, a table scrolls sideways only on a narrow screen and in a labelled region,
    and the first screen holds the headline (all of it on a desktop, the ring on a phone)."""
    page = new_context(locale=locale).new_page()
    failures: dict[str, list[str]] = {}
    shown: set[str] = set()
    sessions = _fixture_sessions()
    assert len(sessions) > len(CONTINUED) + len(ALSO_SHOWN), sessions
    for session in sessions:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(f"/homes/local/sessions/{session}/")
        expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
        for screen, holds in SCREENS.items():
            page.set_viewport_size({"width": screen[0], "height": screen[1]})
            for theme in ("light", "dark"):
                page.emulate_media(color_scheme=theme)
                found = _layout(page, FIRST_SCREEN)
                shown |= {name for name, where in found["screen"].items() if where}
                for said in _layout_failures(found, screen, holds):
                    failures.setdefault(f"{session}: {said}", []).append(
                        f"{screen[0]}×{screen[1]} {theme}"
                    )
        if session == "auto-compact":
            for screen in SCREENS:
                page.set_viewport_size({"width": screen[0], "height": screen[1]})
                page.screenshot(path=artifacts / f"session-{locale}-{screen[0]}x{screen[1]}.png")
    assert not failures, f"{len(failures)} layout failures:\n" + "\n".join(
        f"{said} (at {', '.join(where)})" for said, where in list(failures.items())[:40]
    )
    assert shown == set(FIRST_SCREEN), f"never on a page: {set(FIRST_SCREEN) - shown}"


LIST_HEAD_PX = 400
"""How far down a 390×844 phone's sessions list may start its first session."""


@pytest.mark.browser_context_args(viewport=PHONE, is_mobile=True, has_touch=True)
@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_the_sessions_list_fits_a_phone(
    new_context: CreateContextCallback, server: DshwebServer, artifacts: Path, locale: str
) -> None:
    """On a phone the list's controls fit its width (the sort control was 401 px wide at
    390) and its first session comes within the first half of the screen."""
    page = new_context(locale=locale).new_page()
    page.goto("/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    for width in (390, 320):
        page.set_viewport_size({"width": width, "height": PHONE["height"]})
        found = page.evaluate(
            """() => {
                const sort = document.querySelector("#list-sort").getBoundingClientRect();
                const row = document.querySelector("#session-rows > li").getBoundingClientRect();
                return {page: document.documentElement.scrollWidth, sort: [sort.left, sort.right],
                        row: row.top};
            }"""
        )
        assert found["page"] <= width, f"the list is {found['page']}px wide at {width}: {found}"
        assert found["sort"][0] >= 0 and found["sort"][1] <= width, found
        if width == PHONE["width"]:
            page.screenshot(path=artifacts / f"list-{locale}-phone.png")
            assert found["row"] <= LIST_HEAD_PX, f"the first session starts at {found['row']}px"


LOOK_PROFILE = "sdklook"
"""A copy of the fixture profile that ``test_every_other_page_fits_every_screen`` saves in
(its path, named on the page, is a long one)."""
SECTIONS = ("context-truth", "compaction-basic", "tool-result-pruner")
RULE = "tight in the monorepo's long-named package, told to the platform team's chat"
WEBHOOK_HOST = "hooks.platform-team-notifications.example.invalid"
MAKE_RULE = f"""
from django.contrib.auth import get_user_model
from django.utils import timezone
from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule
from dshweb.core.said import say
owner = get_user_model().objects.get(username={USERNAME!r})
rule = AlertRule.objects.create(
    owner=owner, name={RULE!r}, condition="band", band="tight", scope="folder",
    folder="/nowhere/monorepo/packages/a-package-with-a-rather-long-name-indeed",
    webhook_url="https://{WEBHOOK_HOST}/services/T0000000/B0000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    webhook_secret="s" * 64)
firing = AlertFiring.objects.create(
    rule=rule, home="local", session_id="subagent-parent", key="on", summary="tight (71%)",
    title="!subagent Count the TODO markers under packages/a-package-with-a-rather-long-name",
    fired_at=timezone.now())
AlertDelivery.objects.create(
    firing=firing, channel="webhook", state="failed", attempts=5,
    last_error=say("delivery-failed", problem=say("webhook-unknown-host", host={WEBHOOK_HOST!r})))
AlertDelivery.objects.create(firing=firing, channel="browser", state="sent", attempts=1)
"""
"""``manage.py shell`` code: an alert rule of the signed-in user whose webhook failed (its
host, unknown, said in the error), and a firing of it; nothing fires it (its folder holds
no session) and its webhook is never tried again."""
TOKEN = "构建机上的笔记本"
"""The name of the token the test makes (it stays: a token is revoked, not deleted; no
English word in a page the Chinese accessibility test reads)."""


@pytest.fixture(scope="module")
def shown_once(server: DshwebServer, home: BrowserHome) -> Iterator[str]:
    """What the pages show once something is made: a copy of the fixture profile to save
    in (``LOOK_PROFILE``), and an alert rule with a firing (``MAKE_RULE``); both removed
    afterwards."""
    folder = home.path / "profiles" / LOOK_PROFILE
    shutil.copytree(FIXTURE_HOMES / PROFILES_FROM / "profiles" / "sdk", folder)
    server.manage("shell", "-c", MAKE_RULE)
    yield LOOK_PROFILE
    server.manage(
        "shell",
        "-c",
        f"from dshweb.alerts.models import AlertRule\n"
        f"AlertRule.objects.filter(name={RULE!r}).delete()",
    )
    shutil.rmtree(folder, ignore_errors=True)


def _other_pages(page: Page, profile: str) -> Iterator[str]:
    """Brings ``page`` to every page but a session's in turn, each as it is once something
    is made (a save, a token, a rule's new secret, a refused form), and names it."""
    page.goto("/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    yield "the sessions list"
    page.goto("/cost/")
    yield "cost"
    for session in ("auto-compact", "fold-failures"):
        page.goto(f"/homes/local/sessions/{session}/ledger.html")
        yield f"{session}'s ledger"
    page.goto("/settings/")
    yield "settings"
    for section in SECTIONS:
        page.goto(f"/settings/{profile}/{section}/")
        expect(page.locator("#settings-form")).to_be_visible()
        yield f"{section}'s form"
    page.goto(f"/settings/{profile}/context-truth/")
    page.fill("#id_quantumPercent", "10")
    page.click("#save")
    expect(page.locator(".messages .message.success")).to_be_visible()
    yield "a saved form"
    page.goto(f"/settings/{profile}/history/")
    expect(page.locator("#history .revision").first).to_be_visible()
    yield "its history"
    page.goto("/settings/engine/")
    yield "the engine"
    page.goto("/alerts/new/")
    yield "a new rule"
    page.goto("/alerts/")
    expect(page.locator("#alert-firings > li")).not_to_have_count(0)
    yield "alerts"
    page.locator("#alert-rules a", has_text=RULE).click()
    page.click("#alert-new-secret")
    expect(page.locator("#webhook-secret")).to_be_visible()
    yield "a rule, its new secret shown"
    page.click("#alert-save")
    expect(page.locator(".field-error")).to_contain_text(WEBHOOK_HOST)
    yield "a rule, refused"
    page.goto("/tokens/")
    page.fill("#id_name", TOKEN)
    page.click("#token-make")
    expect(page.locator("#new-token-value")).to_be_visible()
    yield "tokens, a new one shown"
    page.goto("/api/v1/docs")
    yield "the API docs"
    page.goto("/no/such/page/")
    yield "a page not found"
    page.context.clear_cookies()
    page.goto("/accounts/login/")
    yield "sign-in"


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_every_other_page_fits_every_screen(
    new_context: CreateContextCallback,
    server: DshwebServer,
    shown_once: str,
    artifacts: Path,
    locale: str,
) -> None:
    """Every page but a session's (``test_every_session_page_fits_every_screen``), at every
    screen from a small phone's to a wide desktop's, in both themes: nothing leaves its box
    nor widens the page (a settings form was 640 px wide on a phone, the API docs 753, a
    new rule 401, the alerts 548), no card is stretched, and a table or a block of code
    wider than its card scrolls inside it in a labelled region, never on a desktop."""
    page = new_context(locale=locale).new_page()
    failures: dict[str, dict[str, list[str]]] = {}
    for number, name in enumerate(_other_pages(page, shown_once)):
        for width, height in SCREENS:
            page.set_viewport_size({"width": width, "height": height})
            for theme in ("light", "dark"):
                page.emulate_media(color_scheme=theme)
                for said in _box_failures(_layout(page), width):
                    failures.setdefault(name, {}).setdefault(said, []).append(f"{width} {theme}")
        page.set_viewport_size(PHONE)
        page.emulate_media(color_scheme="light")
        page.screenshot(path=artifacts / f"page-{locale}-{number:02}-phone.png")
    assert not failures, "layout failures:\n" + "\n".join(
        f"{name} ({len(found)}):\n"
        + "\n".join(
            f"  {said} (at {', '.join(sorted(set(where)))})"
            for said, where in list(found.items())[:5]
        )
        for name, found in failures.items()
    )
