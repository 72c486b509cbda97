"""The keyboard's way through a page: the first Tab reaches a skip link, shown while it
has the focus, and following it puts the focus on the page's content. (The sign-in page
starts with the focus in its username field instead.)"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("path", ["/", "/alerts/"])
def test_the_first_tab_is_a_skip_link_to_the_content(page: Page, path: str) -> None:
    page.goto(path)
    skip = page.locator("#skip-link")
    hidden = skip.bounding_box()
    assert hidden is None or hidden["y"] < 0  # out of sight
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "skip-link"
    box = skip.bounding_box()
    assert box is not None and box["y"] >= 0  # shown while it has the focus
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "content"
