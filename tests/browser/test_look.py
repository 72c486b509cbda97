"""How the pages look: the theme switch, each theme's colours whatever the system asks,
and the session page on a phone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import REPO
from tests.support.server import DshwebServer

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
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


@pytest.mark.browser_context_args(
    viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True
)
def test_session_page_fits_a_phone(page: Page, server: DshwebServer, artifacts: Path) -> None:
    page.goto("/homes/local/sessions/auto-compact/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#context-ring svg.ring")).to_be_visible()
    # Measured in one script run: a socket message may swap the ring between two calls.
    box = page.evaluate(
        """() => {
            const ring = document.querySelector("#context-ring svg.ring").getBoundingClientRect();
            return {left: ring.left, right: ring.right, width: ring.width,
                    page: document.documentElement.scrollWidth};
        }"""
    )
    assert box["left"] >= 0 and box["right"] <= PHONE["width"], f"the ring sticks out: {box}"
    assert box["width"] >= 100, f"the ring is too small to read: {box}"
    assert box["page"] <= PHONE["width"], f"the page scrolls sideways: {box['page']}px wide"
    page.screenshot(path=artifacts / "phone.png")
    page.screenshot(path=artifacts / "phone-full.png", full_page=True)
