"""Chinese titles render as Chinese: the sessions list in Chromium draws the CJK title of
the ``cjk-emoji`` fixture with glyphs of a font, not with empty boxes (without the CJK
fonts every character is the same box; scripts/test installs them with the browser)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

pytestmark = pytest.mark.browser

# Each character drawn alone on a canvas in the title's own font; the picture of each.
PICTURES = """
([element, characters]) => {
  const font = getComputedStyle(element).font;
  return characters.map((character) => {
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 64;
    const context = canvas.getContext("2d");
    context.font = font.replace(/\\d+(\\.\\d+)?px/, "48px");
    context.fillText(character, 4, 52);
    return Array.from(context.getImageData(0, 0, 64, 64).data).join(",");
  });
}
"""


def test_a_cjk_title_is_drawn_with_glyphs_not_boxes(page: Page) -> None:
    page.goto("/")
    title = page.locator("#sessions a", has_text="你好").first
    assert "报表" in title.inner_text()
    ni, hao, bao, box = page.evaluate(
        PICTURES, [title.element_handle(), ["你", "好", "报", "\ue000"]]
    )
    blank = ",".join(["0"] * 64 * 64 * 4)
    assert blank not in (ni, hao, bao)
    # Without a CJK font each character is the same missing-glyph box.
    assert len({ni, hao, bao}) == 3, "two CJK characters were drawn alike: no CJK font"
    assert box not in (ni, hao, bao)
