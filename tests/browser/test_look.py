"""How the pages look: the theme switch, and the session page on a phone."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import NewContext
from tests.browser.server import DshwebServer

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def test_theme_switch_sets_and_keeps_the_theme(
    page: Page, server: DshwebServer, artifacts: Path
) -> None:
    page.goto("/sessions/auto-compact/")
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


def test_session_page_fits_a_phone(
    new_context: NewContext, server: DshwebServer, artifacts: Path
) -> None:
    phone = new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    page = phone.new_page()
    page.goto("/sessions/auto-compact/")
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
