"""What a session cost, live, in real Chromium: the cost card follows the session as real
DSH frames are appended (a fold lands, requests follow it), and the new fold's ledger row
prices it — each figure the one the core computes for the same log, with no reload and
no script error.

Its own home and server: ``cost-pro`` (real DSH output on ``deepseek-v4-pro``, priced by
the registry) cut just before a compaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.index import HomeIndex
from tests.browser.conftest import WAIT_MS, SameDocument
from tests.support.homes import CutHome
from tests.support.server import DshwebServer, serving

pytestmark = pytest.mark.browser

SESSION = "cost-pro"
COMPACTION = 4
"""The compaction whose ``compaction/start`` the cut leaves out."""


class CostHome(CutHome):
    def figures(self) -> tuple[float | None, int, dict[int, float]]:
        """The session's cost, its folds, and each priced fold's cost by number."""
        index = HomeIndex(self.path)
        index.refresh()
        (shot,) = index.snapshots()
        book = RateBook()
        costed = {
            number: book.compaction(compaction.cost, compaction.summary_usage, compaction.saved)
            for number, compaction in enumerate(shot.ledger.compactions, start=shot.ledger.first)
        }
        costs = {n: p.cost for n, p in costed.items() if p.cost is not None}
        return book.total(shot.cost)[0], shot.ledger.total, costs


@pytest.fixture(scope="module")
def cost_home(tmp_path_factory: pytest.TempPathFactory) -> CostHome:
    return CostHome(tmp_path_factory.mktemp("cost"), SESSION, COMPACTION)


@pytest.fixture(scope="module")
def server(cost_home: CostHome, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    yield from serving(DshwebServer(cost_home.path, tmp_path_factory.mktemp("cost-data")))


def test_the_cost_card_and_the_new_compactions_row_follow_the_session(
    page: Page, cost_home: CostHome, artifacts: Path
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"/homes/local/sessions/{SESSION}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    card = page.locator("#session-cost")
    before, folds_before, _ = cost_home.figures()
    assert before is not None and before > 0
    expect(card).to_have_attribute("data-total-usd", repr(before))
    expect(card).to_have_attribute("data-unpriced", "false")
    expect(card.locator('tr[data-model="deepseek-v4-pro"]')).to_have_count(1)
    same = SameDocument(page)

    cost_home.grow()

    after, folds_after, costs = cost_home.figures()
    assert after is not None and after > before and folds_after > folds_before
    expect(card).to_have_attribute("data-total-usd", repr(after), timeout=WAIT_MS)
    expect(page.locator("#ledger")).to_have_attribute("data-folds", str(folds_after))
    # The folds that landed: each row's cost is the core's for that fold, and more than
    # nothing (a summary, and the prefix the next request sent again).
    landed = [n for n in range(folds_before + 1, folds_after + 1) if n in costs]
    assert any(costs[n] > 0 for n in landed), costs
    for number in landed:
        row = page.locator(f"#ledger tr[data-fold='{number}']")
        expect(row).to_have_attribute("data-cost-usd", repr(costs[number]))
    same.check()
    assert not errors, errors
    page.screenshot(path=artifacts / "cost.png", full_page=True)
    card.screenshot(path=artifacts / "cost-card.png")
    page.locator("#ledger").screenshot(path=artifacts / "cost-ledger.png")
