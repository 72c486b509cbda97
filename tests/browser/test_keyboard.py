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


def test_tab_reaches_compact_before_the_downloads(page: Page) -> None:
    """The Compact card follows the ring on the page as it does on the screen: the
    keyboard reaches its button before any download link of the cards below."""
    page.goto("/homes/local/sessions/auto-compact/")
    order: list[str] = []
    for _ in range(80):
        page.keyboard.press("Tab")
        found = page.evaluate(
            "() => { const e = document.activeElement;"
            " return e.id || (e.hasAttribute('download') ? 'download' : e.tagName); }"
        )
        order.append(found)
        if found == "download":
            break
    assert "compact-button" in order and "download" in order
    assert order.index("compact-button") < order.index("download")
    assert order[0] == "skip-link"
