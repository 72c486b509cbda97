"""The cost page (``/cost/``) and its API call (``/api/v1/cost``): the same figures, which
are the hand-added registry prices of sessions that cross midnight, in the server's time
zone; a figure with a request on a model without a price says it is partial."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dshweb.sessions import selectors
from tests.api.test_v1 import signed_in
from tests.support.snapshots import data_attributes
from tests.support.spendhome import NOW, SESSIONS, spend_home

NOW_MS = int(NOW.timestamp() * 1000)


def rows(page: str, key: str) -> dict[str, tuple[str, str]]:
    """Each table row's ``data-<key>`` → (its ``data-usd``, its ``data-unpriced``)."""
    found = re.findall(
        rf'<tr data-{key}="([^"]+)"[^>]*?data-usd="([^"]*)"\s+data-unpriced="(true|false)"', page
    )
    return {name: (usd, unpriced) for name, usd, unpriced in found}


def as_page(usd: float | None, unpriced: bool) -> tuple[str, str]:
    """A figure as the page's data attributes write it."""
    return ("" if usd is None else str(usd), "true" if unpriced else "false")


@pytest.mark.django_db
def test_the_cost_page_and_the_api_say_the_same_hand_added_figures(
    tmp_path: Path, settings: Any, fresh_hub: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = spend_home(tmp_path / "home")
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home, "DEMO": False}
    settings.TIME_ZONE = "Asia/Shanghai"
    monkeypatch.setattr(selectors, "now_ms", lambda: NOW_MS)
    client, _ = signed_in()
    page = client.get("/cost/").content.decode()
    api = client.get("/api/v1/cost").json()

    assert api["timeZone"] == "Asia/Shanghai" and 'href="/cost/"' in page
    days = rows(page, "day")
    assert list(days) == [d["date"] for d in api["days"]] and len(days) == 14
    assert next(iter(days)) == "2026-09-03"  # 00:40 in Shanghai
    for day in api["days"]:
        assert days[day["date"]] == as_page(day["usd"], day["unpriced"])
    weeks = rows(page, "week")
    assert list(weeks) == [w["week"] for w in api["weeks"]] and list(weeks)[:2] == [
        "2026-W36",
        "2026-W35",
    ]
    for week in api["weeks"]:
        assert weeks[week["week"]] == as_page(week["usd"], week["unpriced"])
    projects = rows(page, "project")
    assert list(projects) == [p["folder"] for p in api["projects"]]
    for project in api["projects"]:
        assert projects[project["folder"]] == as_page(project["usd"], project["unpriced"])
    for window, burn in (("hour", api["lastHour"]), ("day", api["lastDay"])):
        shown = re.search(rf'<div data-window="{window}"[^>]*>', page)
        assert shown is not None
        attributes = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', shown.group(0)))
        assert attributes["data-usd-per-hour"] == str(burn["usdPerHour"])
        assert (attributes["data-usd"], attributes["data-unpriced"]) == as_page(
            burn["usd"], burn["unpriced"]
        )
    today = data_attributes(page, "cost-today")
    assert (today["data-usd"], today["data-unpriced"]) == days["2026-09-03"]

    # The figures themselves: today in Shanghai is the evening session's (16:30 and 16:35
    # UTC), one of them on a model without a price: partial.
    evening = SESSIONS["evening"][1]
    priced = evening[0].usd
    assert priced is not None and evening[1].usd is None
    assert float(days["2026-09-03"][0]) == pytest.approx(priced, rel=1e-12)
    assert days["2026-09-03"][1] == "true"
    section = page[
        page.index('data-day="2026-09-03"') : page.index(
            "</tr>", page.index('data-day="2026-09-03"')
        )
    ]
    assert re.search(r'class="warn">\s*partial\s*<', section)
    # Yesterday there: the session across UTC midnight and the other project's afternoon.
    midnight, other = SESSIONS["midnight"][1], SESSIONS["other"][1]
    expected = sum(r.usd or 0.0 for r in (*midnight, other[1]))
    assert float(days["2026-09-02"][0]) == pytest.approx(expected, rel=1e-12)
    assert days["2026-09-02"][1] == "false" and days["2026-09-01"] == ("0.0", "false")
    assert [p["cwd"] for p in api["projects"]] == ["/work/shop", "/work/blog"]


@pytest.mark.django_db
def test_the_cost_page_without_a_home_says_why(
    tmp_path: Path, settings: Any, fresh_hub: None
) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": tmp_path / "none", "DEMO": False}
    client, _ = signed_in()
    assert client.get("/cost/").status_code == 503
    answer = client.get("/api/v1/cost")
    assert answer.status_code == 503 and "does not exist" in answer.json()["detail"]
