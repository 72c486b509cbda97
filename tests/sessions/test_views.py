"""The pages, through Django's test client, against real DSH sessions of the fixture homes.

Expected figures are computed here from the snapshot with DSH's documented formula
(DSH_FACTS §6), not taken from the code under test.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import math
import re
import shutil
import time
from dataclasses import replace
from html.parser import HTMLParser
from io import StringIO
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.template.loader import render_to_string
from django.test import Client

from dshweb.cli.snapshot import text_fields
from dshweb.config import get_config
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.gauge import Band, context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.pages import SessionList
from dshweb.core.listing.query import ListQuery
from dshweb.core.listing.tree import session_tree
from dshweb.core.log.home import LogFile
from dshweb.live.hub import SessionView
from dshweb.live.service import sync_home
from dshweb.sessions import fragments
from dshweb.sessions.display.figures import dom_id
from dshweb.sessions.selectors import Found, find_session
from tests.conftest import FIXTURE_HOMES
from tests.support.homecopies import home_of_copies
from tests.support.homes import shown_after_each_frame
from tests.support.logbuilder import frames_of
from tests.support.snapshots import LIVE_PART_IDS, fixture_snapshot, session_snapshot, squeezed

SESSIONS = frozenset(("plain-turns", "manual-compact", "auto-compact", "cjk-emoji"))
"""The home the pages show: these fixture homes' sessions on ``plain-turns``' profiles (DSH's
defaults). The first two run on a 1,000,000-token window (ample); the other two on a
24,000-token one, where the default reserve leaves no compaction point: they folded, so
their band goes by the point the engine's decisions infer (moderate)."""


class Elements(HTMLParser):
    """Every start tag's attributes, keyed by ``id`` and by ``data-session-id``."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.by_id: dict[str, dict[str, str]] = {}
        self.rows: dict[str, dict[str, str]] = {}
        self.radios: list[dict[str, str]] = []
        """The checked radio buttons."""
        self.scripts: list[dict[str, str]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if "id" in values:
            self.by_id[values["id"]] = values
        if tag == "li" and "data-session-id" in values:
            self.rows[values["data-session-id"]] = values
        if tag == "input" and values.get("type") == "radio" and "checked" in values:
            self.radios.append(values)
        if tag == "script":
            self.scripts.append(values)


class TopLevel(HTMLParser):
    """The attributes of each top-level element of a fragment, in order."""

    VOID = frozenset(("area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "wbr"))

    def __init__(self, html: str) -> None:
        super().__init__()
        self.depth = 0
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.positions: list[tuple[int, int]] = []
        """Where each element starts: (line from 1, column)."""
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth == 0:
            self.elements.append((tag, {name: value or "" for name, value in attrs}))
            self.positions.append(self.getpos())
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        assert self.depth > 0 or not data.strip(), f"text outside any element: {data!r}"


def session_context(shot: SessionSnapshot) -> dict[str, Any]:
    """What the session view and the session socket render a session's parts with."""
    return fragments.session_context("local", shot, context_gauge(shot))


def ring_percent(used: int, window: int) -> int:
    return min(100, math.floor(used / window * 100 + 0.5))


pytestmark = pytest.mark.usefixtures("fresh_hub", "static_root")


@pytest.fixture
def home(tmp_path: Path, settings: Any) -> Path:
    copy = copy_home(tmp_path / "home")
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": copy, "DEMO": False, "PROFILE": "sdk"}
    return copy


def copy_home(target: Path) -> Path:
    shutil.copytree(FIXTURE_HOMES / "plain-turns" / "profiles", target / "profiles")
    for name in SESSIONS:
        shutil.copytree(FIXTURE_HOMES / name / "sessions", target / "sessions", dirs_exist_ok=True)
    return target


@pytest.fixture
def snapshots(home: Path) -> dict[str, SessionSnapshot]:
    index = HomeIndex(home, profile="sdk")
    index.refresh()
    return {s.session_id: s for s in index.snapshots()}


@pytest.fixture
def user_client(client: Client, django_user_model: Any) -> Client:
    user = django_user_model.objects.create_user("viewer", password="not-used")
    client.force_login(user)
    return client


# --- sign-in ---------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/", "/homes/local/sessions/plain-turns/"])
def test_anonymous_is_sent_to_login(client: Client, home: Path, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"


@pytest.mark.django_db
def test_login_page_is_reachable(client: Client) -> None:
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b'name="password"' in response.content


@pytest.mark.django_db
def test_demo_banner(user_client: Client, home: Path, tmp_path: Path, settings: Any) -> None:
    shown = settings.DSHWEB
    settings.DSHWEB = {**shown, "DSH_HOME": tmp_path / "absent", "DEMO": True}
    assert b"Demo home: these are recorded DSH sessions" in user_client.get("/").content
    settings.DSHWEB = shown
    assert b"Demo home" not in user_client.get("/").content


# --- the sessions list -----------------------------------------------------------


@pytest.mark.django_db
def test_list_shows_every_session_with_its_percent(
    user_client: Client, home: Path, snapshots: dict[str, SessionSnapshot]
) -> None:
    response = user_client.get("/")
    assert response.status_code == 200
    rows = Elements(response.content.decode()).rows
    assert set(rows) == set(snapshots) == SESSIONS
    for session_id, shot in snapshots.items():
        used = shot.context_pressure.get("projectedTokens", shot.context_pressure["pressureTokens"])
        window = shot.context_pressure["contextWindow"]
        assert rows[session_id]["data-percent"] == str(ring_percent(used, window)), session_id
    assert rows["plain-turns"]["data-percent"] == "1"  # 5976 of 1,000,000
    assert rows["plain-turns"]["data-band"] == "ample"  # 5976 / 678,464
    # The profile gives no point (window − reserved − headroom is not positive), but the
    # session folded: the band goes by the point the engine's decisions infer.
    folded = snapshots["auto-compact"]
    assert folded.point is not None and folded.point.threshold_tokens is None
    assert folded.threshold_source == "inferred" and folded.threshold is not None
    assert rows["auto-compact"]["data-band"] == context_gauge(folded).band.value != "unknown"


@pytest.mark.django_db
def test_live_session_is_badged(user_client: Client, home: Path) -> None:
    (lock,) = home.glob("sessions/*/plain-turns/session.lock")
    with lock.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # what DSH holds while it owns the session
        html = user_client.get("/").content.decode()
        page = user_client.get("/homes/local/sessions/plain-turns/").content.decode()
    row = html[html.index('data-session-id="plain-turns"') :].split("</li>", 1)[0]
    assert "badge-live" in row
    assert html.count("badge-live") == 1
    assert "badge-live" in page


@pytest.mark.django_db
def test_list_is_newest_activity_first(
    user_client: Client, home: Path, snapshots: dict[str, SessionSnapshot]
) -> None:
    html = user_client.get("/").content.decode()
    shown = sorted(snapshots, key=lambda sid: html.index(f'data-session-id="{sid}"'))
    assert shown == sorted(snapshots, key=lambda sid: -(snapshots[sid].last_time or 0))


@pytest.mark.django_db
def test_rows_carry_their_figures(
    user_client: Client, home: Path, snapshots: dict[str, SessionSnapshot]
) -> None:
    html = user_client.get("/").content.decode()
    elements = Elements(html)
    for session_id, shot in snapshots.items():
        row = elements.rows[session_id]
        reading = context_gauge(shot)
        # Not the session page's article id: both can be on a page the socket updates.
        assert row["id"] == dom_id("row", f"local/{session_id}") != dom_id("session", session_id)
        assert row["data-parent"] == (shot.parent_session or "")
        assert row["data-last"] == str(shot.last_time or 0)
        assert row["data-live"] == "0"
        assert row["data-depth"] == "0"
        assert row["data-headroom"] == ("" if reading.headroom is None else str(reading.headroom))
        assert "hidden" not in row
    assert elements.by_id["sessions"]["ws-connect"] == "/ws/sessions/"
    assert elements.by_id["live-status"]["data-state"] == "connecting"
    count = elements.by_id["session-count"]
    assert count["data-shown"] == count["data-total"] == str(len(snapshots))
    assert "hidden" in elements.by_id["sessions-empty"]
    assert "hidden" in elements.by_id["sessions-none-match"]
    assert "hidden" in elements.by_id["session-pager"]  # one page


def test_a_row_alone_is_one_element_with_its_id() -> None:
    # What the sessions socket sends: the row template with its row context.
    (entry,) = session_tree([make_snapshot("a/b c", 5, parent="gone")])
    html = render_to_string("dashboard/_session_row.html", fragments.row_context(entry, False))
    ((tag, row),) = TopLevel(html).elements
    assert tag == "li"
    assert row["id"] == "row-local_2f_a_2f_b_20_c"
    assert row["data-session-id"] == "a/b c"
    assert row["data-parent"] == "gone"
    assert row["data-last"] == "5"
    assert "is-orphan" in row["class"]
    assert "hidden" not in row


def test_a_row_cuts_long_texts() -> None:
    shot = replace(make_snapshot("long", 5), title="t" * 100_000, cwd="/" + "d" * 100_000)
    (entry,) = session_tree([shot])
    html = render_to_string("dashboard/_session_row.html", fragments.row_context(entry, False))
    assert len(html) < 8_000


def _shown(html: str) -> list[str]:
    """The ids of the rows on a page, in order."""
    return re.findall(r'<li id="row-[^"]*"\s[^>]*?data-session-id="([^"]*)"', html)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("", SESSIONS),
        ("?q=hello", {"plain-turns", "manual-compact"}),
        ("?q=HELLO+there", {"plain-turns"}),
        ("?q=%E6%95%B4%E7%90%86", {"cjk-emoji"}),  # 整理, in the title
        ("?q=shop-api&state=idle", {"manual-compact"}),  # in the folder
        ("?q=-compact&state=all", {"manual-compact", "auto-compact"}),  # in the id
        ("?state=live", set()),
        ("?state=idle", SESSIONS),
        ("?state=bogus", SESSIONS),
        ("?band=moderate", {"auto-compact", "cjk-emoji"}),
        ("?band=unknown", set()),
        ("?band=ample&q=plain", {"plain-turns"}),
        ("?band=tight", set()),
        ("?band=nonsense&sort=nonsense&page=x&per_page=-3", SESSIONS),
        ("?q=no-such-session", set()),
    ],
)
def test_list_filters_on_the_server(
    user_client: Client, home: Path, query: str, shown: set[str]
) -> None:
    response = user_client.get("/" + query)
    assert response.status_code == 200
    elements = Elements(response.content.decode())
    assert set(elements.rows) == shown  # only the rows the query shows are sent
    count = elements.by_id["session-count"]
    assert (count["data-shown"], count["data-total"]) == (str(len(shown)), str(len(SESSIONS)))
    assert ("hidden" in elements.by_id["sessions-none-match"]) is bool(shown)


@pytest.mark.django_db
def test_list_filter_form_keeps_the_choice(user_client: Client, home: Path) -> None:
    elements = Elements(user_client.get("/?q=+shop+&state=idle").content.decode())
    assert elements.by_id["filter-q"]["value"] == "shop"
    checked = [
        attrs["value"]
        for attrs in Elements(user_client.get("/?state=idle&sort=headroom").content.decode()).radios
    ]
    assert checked == ["idle", "headroom"]
    html = user_client.get("/?band=unknown&per_page=2").content.decode()
    assert re.search(r'<option value="unknown" selected>', html)
    assert re.search(r'<input type="hidden" name="per_page" value="2">', html)
    assert 'name="per_page"' not in user_client.get("/").content.decode()


@pytest.mark.django_db
def test_list_filters_live_sessions(user_client: Client, home: Path) -> None:
    (lock,) = home.glob("sessions/*/plain-turns/session.lock")
    with lock.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        live = Elements(user_client.get("/?state=live").content.decode())
        idle = Elements(user_client.get("/?state=idle").content.decode())
    assert live.rows["plain-turns"]["data-live"] == "1"
    assert set(live.rows) == {"plain-turns"}
    assert set(idle.rows) == SESSIONS - {"plain-turns"}
    # The counts are the whole home's, whatever the filter.
    for page in (live, idle):
        counts = page.by_id["session-counts"]
        assert (counts["data-live"], counts["data-idle"], counts["data-total"]) == ("1", "3", "4")


@pytest.mark.django_db
def test_list_counts_the_whole_home_by_band(
    user_client: Client, home: Path, snapshots: dict[str, SessionSnapshot]
) -> None:
    expected = {band.value: 0 for band in Band}
    for shot in snapshots.values():
        expected[context_gauge(shot).band.value] += 1
    assert expected["ample"] == 2 and expected["moderate"] == 2
    html = user_client.get("/?q=plain").content.decode()
    chips = dict(re.findall(r'data-band-count="(\w+)" data-count="(\d+)"', html))
    # "unknown" has a chip only while some session is in it.
    assert chips == {band: str(n) for band, n in expected.items() if n or band != "unknown"}
    # A band's chip filters by it (keeping the rest of the query), or, when chosen, stops.
    assert 'href="/?q=plain&amp;band=ample"' in html
    chosen = user_client.get("/?q=plain&band=ample").content.decode()
    assert 'href="/?q=plain"' in chosen
    assert 'aria-current="true"' in chosen


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("sort", "order"),
    [
        ("", ["cjk-emoji", "manual-compact", "auto-compact", "plain-turns"]),  # newest first
        ("percent", ["auto-compact", "cjk-emoji", "manual-compact", "plain-turns"]),
        # Least headroom first (the small windows' by their inferred points).
        ("headroom", ["auto-compact", "cjk-emoji", "plain-turns", "manual-compact"]),
    ],
)
def test_list_sorts_on_the_server(
    user_client: Client,
    home: Path,
    snapshots: dict[str, SessionSnapshot],
    sort: str,
    order: list[str],
) -> None:
    # The expectations follow from the fixtures' figures, checked here.
    readings = [context_gauge(snapshots[sid]) for sid in order]
    if sort == "percent":
        assert [r.percent for r in readings] == [41, 37, 1, 1]
    if sort == "headroom":
        assert [r.headroom for r in readings] == [2_635, 3_302, 672_488, 672_567]
    html = user_client.get(f"/?sort={sort}").content.decode()
    assert _shown(html) == order


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "rows", "page", "pages"),
    [
        ("?per_page=2", ["cjk-emoji", "manual-compact"], 1, 2),
        ("?per_page=2&page=2", ["auto-compact", "plain-turns"], 2, 2),
        ("?per_page=2&page=99", ["auto-compact", "plain-turns"], 2, 2),  # clamped to the last
        ("?per_page=3&page=2", ["plain-turns"], 2, 2),
        ("?per_page=2&page=2&sort=percent", ["manual-compact", "plain-turns"], 2, 2),
        ("?per_page=1&page=2&q=hello", ["plain-turns"], 2, 2),
    ],
)
def test_list_pages(
    user_client: Client, home: Path, query: str, rows: list[str], page: int, pages: int
) -> None:
    html = user_client.get("/" + query).content.decode()
    assert _shown(html) == rows
    elements = Elements(html)
    pager = elements.by_id["session-pager"]
    assert (pager["data-page"], pager["data-pages"]) == (str(page), str(pages))
    assert "hidden" not in pager
    count = elements.by_id["session-count"]
    first = (page - 1) * int(re.findall(r"per_page=(\d+)", query)[0]) + 1
    assert (count["data-first"], count["data-last"]) == (str(first), str(first + len(rows) - 1))


@pytest.mark.django_db
def test_pager_links_keep_the_query(user_client: Client, home: Path) -> None:
    html = user_client.get("/?q=projects&per_page=1&page=2&sort=percent").content.decode()
    # Plain links (no script needed) and the same address for htmx, pushed to the address bar.
    links = re.findall(r'<a [^>]*href="([^"]*)" hx-get="([^"]*)" data-page="(\d+)"', html)
    assert (
        "/?q=projects&amp;sort=percent&amp;per_page=1",
        "/?q=projects&amp;sort=percent&amp;per_page=1",
        "1",
    ) in links
    assert (
        "/?q=projects&amp;sort=percent&amp;page=3&amp;per_page=1",
        "/?q=projects&amp;sort=percent&amp;page=3&amp;per_page=1",
        "3",
    ) in links
    pager = Elements(html).by_id["session-pager"]
    assert (pager["hx-target"], pager["hx-push-url"]) == ("#sessions", "true")
    # The list's socket carries the same query, so it pushes only this page.
    assert Elements(html).by_id["sessions"]["ws-connect"] == (
        "/ws/sessions/?q=projects&sort=percent&page=2&per_page=1"
    )


@pytest.mark.django_db
def test_a_big_home_is_served_a_page_at_a_time(
    user_client: Client, tmp_path: Path, settings: Any
) -> None:
    big = home_of_copies(FIXTURE_HOMES / "plain-turns", tmp_path / "big", 600)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": big, "PROFILE": "sdk"}
    sync_home()
    html = user_client.get("/").content.decode()
    assert len(html.encode()) < 256 * 1024
    assert _shown(html) == [f"copy-{n:04}" for n in range(50)]  # the same times: by id
    last = user_client.get("/?page=12").content.decode()
    assert _shown(last) == [f"copy-{n:04}" for n in range(550, 600)]
    pager = Elements(last).by_id["session-pager"]
    assert (pager["data-page"], pager["data-pages"]) == ("12", "12")
    assert re.findall(r'data-page="(\d+)">', last) == ["11", "1", "10", "11", "12"]


@pytest.mark.django_db
def test_list_fragment_for_htmx(user_client: Client, home: Path) -> None:
    response = user_client.get(
        "/?q=+hello+&state=all&band=&sort=percent&page=1", headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="sessions"')
    assert "<html" not in html
    assert _shown(html) == ["manual-compact", "plain-turns"]
    # The address bar gets the query as the server read it, defaults left out.
    assert response["HX-Push-Url"] == "/?q=hello&sort=percent"
    assert "HX-Request" in response["Vary"]
    # Going back to a page htmx did not keep: the whole page again.
    restore = user_client.get(
        "/?q=hello", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"}
    )
    assert "<html" in restore.content.decode()
    assert "HX-Push-Url" not in restore


# --- the session page ------------------------------------------------------------


@pytest.mark.django_db
def test_session_page_shows_the_projections(
    user_client: Client, home: Path, snapshots: dict[str, SessionSnapshot]
) -> None:
    shot = snapshots["plain-turns"]
    response = user_client.get("/homes/local/sessions/plain-turns/")
    assert response.status_code == 200
    html = response.content.decode()
    elements = Elements(html).by_id

    pressure = shot.context_pressure
    used = pressure["projectedTokens"]
    ring = elements["context-ring"]
    assert ring["data-used"] == str(used) == "5976"
    assert ring["data-window"] == str(pressure["contextWindow"]) == "1000000"
    assert ring["data-percent"] == "1"
    assert ring["data-threshold"] == "678464"
    assert ring["data-band"] == "ample"

    breakdown = elements["breakdown"]
    assert breakdown["data-system"] == str(shot.context_breakdown["systemTokens"])
    assert breakdown["data-tools"] == str(shot.context_breakdown["toolsTokens"])
    assert breakdown["data-messages"] == str(shot.context_breakdown["messageTokens"])

    figures = [
        pressure["pressureTokens"],
        pressure["projectedTokens"],
        pressure["contextWindow"],
        *shot.token_usage.values(),
        shot.measured_tokens,
        678464 - used,  # headroom
    ]
    assert shot.point is not None
    figures += [shot.point.retain_tokens, shot.point.reserved_tokens]
    for figure in figures:
        assert f'<data value="{figure}">{figure:,}</data>' in html, figure

    usage = shot.token_usage
    read = usage["cacheReadTokens"]
    hit = read / (usage["uncachedInputTokens"] + read + usage["cacheWriteTokens"])
    assert f"{math.floor(hit * 1000 + 0.5) / 10:.1f}%" in html  # 17,408 / 29,131 → 59.8%
    for node in shot.largest_nodes:
        assert f'data-seq="{node.seq}" data-tokens="{node.tokens}"' in html


@pytest.mark.django_db
def test_session_page_is_its_live_parts(
    user_client: Client, home: Path, snapshots: dict[str, SessionSnapshot]
) -> None:
    html = user_client.get("/homes/local/sessions/plain-turns/").content.decode()
    # The socket sends the live parts; the first render is the very same markup, part by
    # part, with the Compact card after the ring and what fills the context, before what
    # the next fold would take away.
    shot = snapshots["plain-turns"]
    parts = [render_to_string(name, session_context(shot)) for name, _ in fragments.LIVE_PARTS]
    for part in parts:
        assert part.strip() in html
    live = "".join(parts)
    assert [attrs.get("id") for _, attrs in TopLevel(live).elements] == list(LIVE_PART_IDS)
    order = [html.index(f'id="{part_id}"') for part_id in LIVE_PART_IDS]
    assert order == sorted(order)
    compact = html.index('id="compact-card"')
    assert html.index('id="breakdown"') < compact < html.index('id="fold-preview"')
    elements = Elements(html).by_id
    article = elements[dom_id("session", "plain-turns")]
    assert article["ws-connect"] == "/ws/homes/local/sessions/plain-turns/"
    assert article["hx-ext"] == "ws"
    assert elements["live-status"]["data-state"] == "connecting"
    assert "band-ample" in elements["context-ring"]["class"]


def _live_parts(shot: SessionSnapshot) -> str:
    return "".join(
        render_to_string(name, session_context(shot)) for name, _ in fragments.LIVE_PARTS
    )


@pytest.mark.django_db
def test_a_part_that_shows_what_did_not_change_is_not_rendered_again(
    snapshots: dict[str, SessionSnapshot],
) -> None:
    """The ledger's part is rendered again only when its folds change; the result is
    what rendering everything from nothing gives, every time."""
    shot = snapshots["auto-compact"]
    assert shot.ledger.compactions
    first = fragments.live_parts_html("local", SessionView(shot, context_gauge(shot), 1))
    rendered: list[str] = []
    real = fragments._render

    def counting(name: str, context: dict[str, Any]) -> str:
        rendered.append(name)
        return real(name, context)

    grown = replace(shot, last_seq=shot.last_seq + 1, measured_tokens=shot.measured_tokens + 7)
    with patch.object(fragments, "_render", counting):
        second = fragments.live_parts_html("local", SessionView(grown, context_gauge(grown), 2))
        assert "dashboard/_ledger.html" not in rendered
        assert second != first
        folded = replace(
            grown, ledger=replace(grown.ledger, compactions=grown.ledger.compactions[:-1])
        )
        rendered.clear()
        third = fragments.live_parts_html("local", SessionView(folded, context_gauge(folded), 3))
        assert "dashboard/_ledger.html" in rendered
    for view, html in ((grown, second), (folded, third)):
        fragments._rendered.clear()
        fragments._steady.clear()
        assert fragments.live_parts_html("local", SessionView(view, context_gauge(view), 4)) == html


@pytest.mark.django_db
def test_session_socket_url_is_encoded() -> None:
    shot = make_snapshot("a/b c?d#é", 1)
    html = render_to_string("dashboard/_session.html", session_context(shot))
    ((_, article),) = TopLevel(html).elements
    assert article["ws-connect"] == "/ws/homes/local/sessions/a%2Fb%20c%3Fd%23%C3%A9/"


@pytest.mark.django_db
def test_session_before_its_first_request_renders() -> None:
    # A session DSH has just opened: no pressure, breakdown or usage figures yet.
    shot = replace(make_snapshot("fresh", 1), context_pressure={})
    html = _live_parts(shot)
    assert Elements(html).by_id["context-ring"]["data-band"] == "unknown"
    assert '<data value="">—</data>' in html


# A Content-Security-Policy allows base.html's one inline script (the theme, applied
# before the first paint) by this hash: change the two together.
THEME_SCRIPT_HASH = "sha256-Q2CMYqCgc42sBTbpbHevHgM3e8x98WJvXBdlXQWDkQg="


@pytest.mark.django_db
def test_the_one_inline_script_has_the_known_hash(client: Client) -> None:
    html = client.get("/accounts/login/").content.decode()
    (inline,) = re.findall(r"<script>(.*?)</script>", html, flags=re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    assert f"sha256-{digest}" == THEME_SCRIPT_HASH


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/", "/homes/local/sessions/plain-turns/", "/accounts/login/"])
def test_pages_load_scripts_from_own_static_files(client: Client, home: Path, url: str) -> None:
    html = client.get(url, follow=True).content.decode()
    sources = [attrs["src"] for attrs in Elements(html).scripts if "src" in attrs]
    assert sources == [
        "/static/vendor/htmx/htmx.min.js",
        "/static/vendor/htmx-ext-ws/ws.min.js",
        "/static/dshweb/live.js",
    ]
    assert all("defer" in attrs for attrs in Elements(html).scripts if "src" in attrs)
    assert "theme-switch" in Elements(html).by_id
    assert " on" not in html.split("<body", 1)[1].split("=", 1)[0]  # no inline handlers


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("session_id", "compactions", "passes"),
    [("auto-compact", "3", "0"), ("cjk-emoji", "0", "1"), ("plain-turns", "0", "0")],
)
def test_session_page_counts_compactions_and_prunes(
    user_client: Client, home: Path, session_id: str, compactions: str, passes: str
) -> None:
    """The card counts what the ledger's summary counts, under the same names."""
    html = user_client.get(f"/homes/local/sessions/{session_id}/").content.decode()
    pattern = r"<dt>(Compactions|Prune passes)</dt>\s*<dd>\s*<data value=\"\d+\">(\d+)<"
    assert dict(re.findall(pattern, html)) == {"Compactions": compactions, "Prune passes": passes}
    summary = re.search(r'<p class="ledger-summary">\s*(.*?)</p>', html, flags=re.DOTALL)
    if summary is not None:
        assert f"{compactions} compaction" in summary[1]
        assert f"{passes} prune pass" in summary[1]


@pytest.mark.django_db
def test_prune_passes_show_their_pruned_results(user_client: Client, home: Path) -> None:
    html = user_client.get("/homes/local/sessions/cjk-emoji/").content.decode()
    pruned = r'<dt>Prune passes</dt>\s*<dd>(?:(?!</dd>).)*<span class="muted">\(cut 2 tool results'
    assert re.search(pruned, html, re.S)  # in the prune passes' own <dd>


@pytest.mark.django_db
def test_unknown_session_is_404(user_client: Client, home: Path) -> None:
    response = user_client.get("/homes/local/sessions/no-such-session/")
    assert response.status_code == 404
    assert b"no-such-session" in response.content


@pytest.mark.django_db
def test_unknown_page_is_404(user_client: Client, home: Path) -> None:
    response = user_client.get("/no/such/page/")
    assert response.status_code == 404
    assert b"There is no page at" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/", "/homes/local/sessions/plain-turns/"])
def test_missing_home_is_explained(
    user_client: Client, tmp_path: Path, settings: Any, url: str
) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": tmp_path / "nowhere", "DEMO": False}
    response = user_client.get(url)
    assert response.status_code == 503
    html = response.content.decode()
    assert "Cannot read the DSH home" in html
    assert f"DSH home {tmp_path / 'nowhere'} does not exist" in html
    assert "Traceback" not in html


@pytest.mark.django_db
def test_home_that_appears_later_is_picked_up(
    user_client: Client, tmp_path: Path, settings: Any
) -> None:
    later = tmp_path / "later"
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": later, "DEMO": False}
    assert user_client.get("/").status_code == 503
    copy_home(tmp_path / "staged").rename(later)  # appears whole, as a moved folder does
    deadline = time.monotonic() + 20  # the hub looks again every few seconds
    while b'data-session-id="plain-turns"' not in user_client.get("/").content:
        assert time.monotonic() < deadline, "the home that appeared was never read"
        time.sleep(0.2)


# --- sub-agents under their parent -----------------------------------------------


def make_snapshot(session_id: str, last_time: int, parent: str | None = None) -> SessionSnapshot:
    pressure = {"contextWindow": 1000, "projectedTokens": 10}
    return session_snapshot(session_id, last_time, parent=parent, context_pressure=pressure)


def test_sub_agents_follow_their_parent() -> None:
    shots = [
        make_snapshot("a", 100),
        make_snapshot("b", 300),
        make_snapshot("a-sub-old", 150, parent="a"),
        make_snapshot("a-sub-new", 400, parent="a"),  # makes "a" the newest subtree
        make_snapshot("a-sub-sub", 50, parent="a-sub-new"),
        make_snapshot("lost", 200, parent="gone"),
        make_snapshot("loop-1", 10, parent="loop-2"),
        make_snapshot("loop-2", 20, parent="loop-1"),
    ]
    entries = session_tree(shots)
    assert [(e.snapshot.session_id, e.depth, e.orphan) for e in entries] == [
        ("a", 0, False),
        ("a-sub-new", 1, False),
        ("a-sub-sub", 2, False),
        ("a-sub-old", 1, False),
        ("b", 0, False),
        ("lost", 0, True),
        ("loop-1", 0, True),  # a loop: both share the newest time, ties go by id
        ("loop-2", 1, False),
    ]


def _table(shots: list[SessionSnapshot]) -> str:
    page = SessionList(session_tree(shots)).page(ListQuery())
    return render_to_string("dashboard/_session_table.html", fragments.list_context(page))


def test_list_markup_nests_sub_agents() -> None:
    shots = [make_snapshot("parent", 100), make_snapshot("child", 50, parent="parent")]
    html = _table(shots)
    rows = Elements(html).rows
    assert rows["parent"]["data-depth"] == "0"
    assert rows["child"]["data-depth"] == "1"
    assert "is-subagent" in rows["child"]["class"]
    assert html.index('data-session-id="parent"') < html.index('data-session-id="child"')


def test_errors_are_flagged_in_the_list() -> None:
    shot = replace(make_snapshot("broken", 1), errors=("bad frame (at byte 12)",))
    html = _table([shot])
    assert "has-errors" in Elements(html).rows["broken"]["class"]
    assert "1 error<" in html
    assert context_gauge(shot).band is Band.UNKNOWN


# --- dshweb_bootstrap ------------------------------------------------------------


@pytest.mark.django_db
def test_bootstrap_creates_one_admin_once() -> None:
    users = get_user_model()
    first = StringIO()
    call_command("dshweb_bootstrap", stdout=first)
    line = first.getvalue().strip()
    assert "\n" not in line
    assert "'admin'" in line
    assert "shown only this once" in line
    password = line.split("with password '", 1)[1].split("'", 1)[0]
    assert len(password) >= 16
    assert authenticate(username="admin", password=password) is not None
    assert users.objects.filter(is_superuser=True).count() == 1

    again = StringIO()
    call_command("dshweb_bootstrap", stdout=again)
    assert password not in again.getvalue()
    assert "password" not in again.getvalue()
    assert users.objects.count() == 1
    assert authenticate(username="admin", password=password) is not None


@pytest.mark.django_db
def test_bootstrap_leaves_an_existing_superuser_alone(django_user_model: Any) -> None:
    django_user_model.objects.create_superuser("me", password="x" * 12)
    out = StringIO()
    call_command("dshweb_bootstrap", stdout=out)
    assert out.getvalue() == ""
    assert not django_user_model.objects.filter(username="admin").exists()


@pytest.mark.django_db
def test_bootstrap_will_not_take_over_a_plain_admin_user(django_user_model: Any) -> None:
    django_user_model.objects.create_user("admin", password="x" * 12)
    with pytest.raises(CommandError, match="not a superuser"):
        call_command("dshweb_bootstrap", stdout=StringIO())
    assert not django_user_model.objects.filter(is_superuser=True).exists()


@pytest.mark.django_db
def test_a_profile_dsh_refuses_is_named_on_the_session_page(
    user_client: Client, home: Path
) -> None:
    patch = home / "profiles" / "sdk" / "cordis.patch.yml"
    patch.write_text(
        "- id: compaction-basic\n  config:\n    retainTokens: 1\n    retainTokens: 2\n"
    )
    sync_home()
    html = user_client.get("/homes/local/sessions/plain-turns/").content.decode()
    assert Elements(html).by_id["session-errors"]["data-count"] == "1"
    where = f"{patch}: duplicated mapping key at line 4, column 5"
    assert f"DSH cannot load profile &#x27;sdk&#x27;: {where}" in html
    card = html.split('id="compaction-point"', 1)[1]
    threshold = card.split("<dt>Compaction point</dt>", 1)[1].split("</dd>", 1)[0]
    assert "<data" not in threshold  # no compaction point: dsh would not start
    patch.write_text("- id: compaction-basic\n  config: {headroomTokens: 4096}\n")
    sync_home()
    html = user_client.get("/homes/local/sessions/plain-turns/").content.decode()
    assert Elements(html).by_id["session-errors"]["data-count"] == "0"
    card = html.split('id="compaction-point"', 1)[1]
    assert "<data" in card.split("<dt>Compaction point</dt>", 1)[1].split("</dd>", 1)[0]


def test_every_response_says_the_server_time_it_took(user_client: Client) -> None:
    response = user_client.get("/")
    timing = re.fullmatch(r"app;dur=(\d+\.\d)", response["Server-Timing"])
    assert timing is not None, response["Server-Timing"]
    assert 0 < float(timing.group(1)) < 60_000
    assert "Server-Timing" in Client().get("/accounts/login/")  # signed out too


def test_a_ledger_row_is_rendered_again_when_its_compaction_changes() -> None:
    from dshweb.core.fold.compactions import Compaction
    from dshweb.sessions.display.ledger_pages import NumberedCompaction

    open_compaction = Compaction("automatic", 40, None, turn=3, before=9000)
    shown = fragments.ledger_row_html(NumberedCompaction(7, open_compaction), True, RateBook())
    assert 'data-status="open"' in shown and "in progress" in shown
    assert (
        fragments.ledger_row_html(NumberedCompaction(7, open_compaction), True, RateBook()) is shown
    )  # kept
    done = replace(open_compaction, end_seq=44, after=2500)
    ended = fragments.ledger_row_html(NumberedCompaction(7, done), True, RateBook())
    assert 'data-status="done"' in ended and "in progress" not in ended
    assert 'data-after="2500"' in ended and '<data value="6500">6,500</data>' in ended
    renumbered = fragments.ledger_row_html(NumberedCompaction(8, done), True, RateBook())
    assert 'data-fold="8"' in renumbered and 'data-fold="7"' in ended


@pytest.mark.django_db
@pytest.mark.django_db  # the parts read the session's latest Compact request
def test_the_ring_says_in_words_what_it_draws() -> None:
    from dshweb.core.fold.gauge import context_gauge

    shot = fixture_snapshot("pace-steady")
    gauge = context_gauge(shot)
    assert gauge.used and gauge.window and gauge.threshold is not None
    html = fragments.live_parts_html("local", SessionView(shot, gauge, 1))
    ring = re.search(r'<svg class="ring"[^>]*role="img"[^>]*aria-label="([^"]*)"', html)
    assert ring is not None
    assert ring[1] == (
        f"{gauge.percent}% of the context window used: {gauge.used:,} of {gauge.window:,} "
        f"tokens; compaction point {gauge.threshold:,} tokens; band {gauge.band}"
    )


@pytest.mark.django_db  # the parts read the session's latest Compact request
def test_the_ring_says_when_the_next_compaction_should_come_and_where_the_next_steps_land() -> None:
    from unittest.mock import patch

    from dshweb.core.fold.forecast import IDLE_AFTER_MS
    from dshweb.core.fold.gauge import context_gauge

    shot = fixture_snapshot("pace-steady")
    view = SessionView(shot, context_gauge(shot), 1)
    last_step = shot.step_times[-1]
    with patch("dshweb.sessions.fragments.time.time", return_value=(last_step + 60_000) / 1000):
        html = fragments.live_parts_html("local", view)
    said = shot.forecast(last_step + 60_000)
    assert said.steps is not None and said.steps_low is not None and said.steps_high is not None
    elements = Elements(html).by_id
    forecast = elements["forecast"]
    assert forecast["data-steps"] == str(round(said.steps, 2))
    assert (forecast["data-steps-low"], forecast["data-steps-high"]) == (
        str(said.steps_low),
        str(said.steps_high),
    )
    assert forecast["data-reason"] == ""
    shown = math.ceil(said.steps)
    assert f"Fold in about {shown} step" in html
    # The next summary beside it (nothing here is over the pruner's threshold: the same),
    # and what both go by: the profile's point, the session's own pace.
    summary = elements["summary-forecast"]
    said_summary = shot.summary_forecast(last_step + 60_000)
    assert said_summary.steps is not None
    assert summary["data-steps"] == str(said_summary.steps)
    assert f"Summary in about {said_summary.steps} step" in html
    for element in (forecast, summary):
        assert (element["data-point-source"], element["data-pace"]) == ("profile", "session")
    basis = elements["forecast-basis"]
    assert (basis["data-point-low"], basis["data-point-high"]) == ("12000", "12000")
    assert (
        'Both go by the compaction point 12,000 tokens <span class="source">(from the profile)'
        "</span>" in squeezed(html)
    )
    # The faint arc: from the ring's fill, the next steps at the forecast's pace.
    gauge = context_gauge(shot)
    assert gauge.used is not None and gauge.window and said.per_step
    ahead = re.search(
        r'class="ring-ahead"[^>]*stroke-dasharray="([\d.]+) 100" '
        r'stroke-dashoffset="-([\d.]+)"',
        html,
    )
    assert ahead is not None
    start = gauge.used / gauge.window * 100
    assert float(ahead[2]) == pytest.approx(start, abs=0.001)
    steps = min(3.0, said.steps)
    end = min(
        (gauge.used + steps * said.per_step) / gauge.window * 100, 12_000 / gauge.window * 100
    )
    assert float(ahead[1]) == pytest.approx(end - start, abs=0.001)
    # Half an hour on, idle: no forecast, no arc (the same version renders again).
    with patch(
        "dshweb.sessions.fragments.time.time",
        return_value=(last_step + IDLE_AFTER_MS) / 1000,
    ):
        idle = fragments.live_parts_html("local", view)
    assert Elements(idle).by_id["forecast"]["data-reason"] == "idle"
    assert "No fold forecast: idle" in idle and "ring-ahead" not in idle
    assert Elements(idle).by_id["summary-forecast"]["data-reason"] == "idle"
    assert "No summary forecast: idle" in idle and "forecast-basis" not in idle
    assert "forecast-pace" not in html  # the session's own pace: nothing to say


@pytest.mark.django_db  # the parts read the session's latest Compact request
def test_a_young_sessions_ring_says_whose_pace_its_forecast_goes_by(tmp_path: Path) -> None:
    from unittest.mock import patch

    from dshweb.core.fold.gauge import context_gauge
    from tests.support.snapshots import home_with_a_young_session

    index, young, _ = home_with_a_young_session(tmp_path)
    shot = index.snapshot(young)
    view = SessionView(shot, context_gauge(shot), 1)
    with patch("dshweb.sessions.fragments.time.time", return_value=shot.step_times[-1] / 1000):
        html = fragments.live_parts_html("local", view)
    elements = Elements(html).by_id
    assert elements["forecast"]["data-pace"] == elements["summary-forecast"]["data-pace"]
    assert elements["forecast"]["data-pace"] == "home"
    assert elements["forecast-basis"]["data-pace"] == "home"
    assert (
        f"At the pace of this home's other sessions on {shot.model}: this one has too "
        "few steps yet." in html
    )


@pytest.mark.django_db  # the parts read the session's latest Compact request
def test_before_the_first_compaction_under_an_unrecorded_patch_the_ring_forecasts_by_the_rule() -> (
    None
):
    from unittest.mock import patch

    from dshweb.core.fold.gauge import context_gauge

    # hidden-sdk-1 (a patch its log does not record, point 13,202) before its first fold:
    # only the engine's own rule bounds the point above (24,000 − 3,000 reserved).
    shot = fixture_snapshot("hidden-sdk-1", 372)
    assert shot.ledger.summaries == 0 and shot.inferred.low is not None
    view = SessionView(shot, context_gauge(shot), 1)
    with patch("dshweb.sessions.fragments.time.time", return_value=shot.step_times[-1] / 1000):
        html = fragments.live_parts_html("local", view)
    elements = Elements(html).by_id
    forecast = elements["forecast"]
    assert forecast["data-reason"] == "" and forecast["data-steps"] != ""
    assert forecast["data-point-source"] == "inferred"
    basis = elements["forecast-basis"]
    assert (basis["data-point-low"], basis["data-point-high"]) == (
        str(shot.inferred.low),
        "21000",
    )
    assert (
        f"Both go by the compaction point {shot.inferred.low:,}–21,000 tokens "
        '<span class="source">(inferred from what the engine did)</span>' in squeezed(html)
    )


@pytest.mark.django_db
def test_a_list_row_says_how_soon_its_session_folds() -> None:
    from unittest.mock import patch

    from dshweb.core.fold.forecast import IDLE_AFTER_MS
    from dshweb.core.fold.gauge import context_gauge
    from dshweb.core.listing.tree import SessionEntry

    shot = fixture_snapshot("pace-steady")
    entry = SessionEntry(shot, context_gauge(shot), 0, False, "local")
    last_step = shot.step_times[-1]
    said = shot.forecast(last_step + 60_000)
    assert said.steps is not None
    with patch("dshweb.sessions.fragments.time.time", return_value=last_step / 1000 + 60):
        row = render_to_string(fragments.ROW_TEMPLATE, fragments.row_context(entry, False))
    line = re.search(
        r'<div class="gauge-line fold-in" data-steps="([^"]*)"\s+data-reason="([^"]*)">([^<]*)<',
        row,
    )
    assert line is not None
    assert line.groups() == (
        str(round(said.steps, 2)),
        "",
        f"fold in ~{math.ceil(said.steps)} steps",
    )
    idle_at = (last_step + IDLE_AFTER_MS) / 1000
    with patch("dshweb.sessions.fragments.time.time", return_value=idle_at):
        row = render_to_string(fragments.ROW_TEMPLATE, fragments.row_context(entry, False))
    assert 'data-reason="idle">no fold forecast<' in row


@pytest.mark.django_db
@pytest.mark.django_db  # the parts read the session's latest Compact request
def test_the_ring_of_a_session_whose_point_the_profile_cannot_tell_shows_the_inferred_one() -> None:
    from dshweb.core.fold.gauge import context_gauge

    shot = fixture_snapshot("patched-point")
    low, high = shot.inferred.low, shot.inferred.high
    assert low is not None and high is not None
    html = fragments.live_parts_html("local", SessionView(shot, context_gauge(shot), 1))
    ring = Elements(html).by_id["context-ring"]
    assert ring["data-threshold-source"] == "inferred"
    assert (ring["data-threshold-low"], ring["data-threshold-high"]) == (str(low), str(high))
    assert ring["data-threshold"] == str((low + high) // 2)
    assert ring["data-band"] != "unknown"  # it has a point to be measured against now
    said = Elements(html).by_id["inferred-point"]
    assert said is not None
    assert f"between {low:,} and {high:,} tokens" in html
    assert "the profile gives none for this window" in html
    # A session whose profile the engine went by says nothing of it.
    shot = fixture_snapshot("pace-steady")
    html = fragments.live_parts_html("local", SessionView(shot, context_gauge(shot), 1))
    ring = Elements(html).by_id["context-ring"]
    assert ring["data-threshold-source"] == "profile" and "data-threshold-low" not in ring
    assert "inferred-point" not in html


@pytest.mark.django_db
@pytest.mark.django_db  # the parts read the session's latest Compact request
def test_the_session_page_shows_what_the_model_was_told_beside_the_truth_now() -> None:
    from dshweb.core.fold.gauge import context_gauge

    shot = fixture_snapshot("told-unmirrored")
    line = shot.told.line
    assert line is not None
    gauge = context_gauge(shot)
    html = fragments.live_parts_html("local", SessionView(shot, gauge, 1))
    card = Elements(html).by_id["told"]
    assert card["data-told-band"] == "ample" and card["data-now-band"] == gauge.band
    assert gauge.band in (Band.TIGHT, Band.CRITICAL)  # 10K of a 12,000 point
    assert card["data-disagrees"] == "true" and card["data-bands-apart"] == "2"
    assert line.text.replace("'", "&#x27;") in html
    assert (
        f"it was told <strong>ample</strong>, the context is <strong>{gauge.band}</strong>" in html
    )
    assert "told-point" in Elements(html).by_id  # the plugin names no point; the engine does
    # A line that agrees with the truth raises no flag.
    agreeing = fixture_snapshot("told-truth", 58)  # told moderate at 10K, before any fold
    agreeing_gauge = context_gauge(agreeing)
    assert agreeing_gauge.band == Band.MODERATE
    html = fragments.live_parts_html("local", SessionView(agreeing, agreeing_gauge, 2))
    card = Elements(html).by_id["told"]
    assert (card["data-told-band"], card["data-disagrees"]) == ("moderate", "false")
    assert "told-flag" not in Elements(html).by_id and "told-point" not in Elements(html).by_id
    # Without the plugin the model was told nothing, and the page says so, without a
    # warning: it holds no band that could be stale.
    plain = fixture_snapshot("auto-compact")
    html = fragments.live_parts_html("local", SessionView(plain, context_gauge(plain), 3))
    card = Elements(html).by_id["told"]
    assert (card["data-told-band"], card["data-disagrees"]) == ("nothing", "false")
    assert "The model was told nothing about its context" in html
    assert 'class="empty" id="told-flag"' in html and "card-warn" not in card.get("class", "")


@pytest.mark.django_db
def test_a_log_whose_tail_is_half_written_says_its_figures_are_older(
    user_client: Client, home: Path, tmp_path: Path
) -> None:
    """A real log cut in the middle of the last frame that moves its ring: the page shows
    the figures of the whole frames before it, says they are as of the last whole event
    and that the tail is not whole (being written while DSH holds the session, else
    torn), and its Errors card does not say that every event was read."""
    (log,) = home.glob("sessions/*/auto-compact/session.v4.jsonl.zstd")
    frames = frames_of(log)
    whole = b"".join(frames)
    shown = shown_after_each_frame(home / "profiles", LogFile(log, 4, True), tmp_path / "fold")
    percents = [each.gauge.percent for each in shown]
    cut = max(k for k in range(1, len(frames)) if percents[k - 1] != percents[k])
    older, last_seq = percents[cut - 1], shown[cut - 1].snapshot.last_seq
    assert older is not None
    before = b"".join(frames[:cut])
    torn = frames[cut][: len(frames[cut]) // 2]
    log.write_bytes(before + torn)
    sync_home()

    page = user_client.get("/homes/local/sessions/auto-compact/").content.decode()
    elements = Elements(page)
    assert elements.by_id["context-ring"]["data-percent"] == str(older)
    note = elements.by_id["log-tail"]
    assert (note["data-tail-bytes"], note["data-last-seq"], note["data-state"]) == (
        str(len(torn)),
        str(last_seq),
        "torn",
    )
    words = squeezed(page)
    assert (
        f"Figures as of the last whole event (seq {last_seq}): the log ends in {len(torn):,}"
        " bytes that are not a whole event, torn when DSH stopped writing them." in words
    )
    errors = page[page.index('id="session-errors"') :].split("</section>", 1)[0]
    assert "every event so far was read" not in errors
    assert "None up to the last whole event" in squeezed(errors)
    assert elements.by_id["session-errors"]["data-tail-bytes"] == str(len(torn))
    # The API and the snapshot's text say so too (dsh_snapshot --json is the same dict).
    api = user_client.get("/api/v1/homes/local/sessions/auto-compact").json()
    assert (api["tailBytes"], api["lastSeq"], api["percent"]) == (len(torn), last_seq, older)
    view = find_session("local", "auto-compact")
    assert isinstance(view, Found)
    assert text_fields(view.view.snapshot, get_config().rate_book)[-1] == (
        f"{len(torn)} bytes after event {last_seq} torn"
    )

    (lock,) = home.glob("sessions/*/auto-compact/session.lock")
    with lock.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # DSH holds it: the tail is being written
        sync_home()
        page = user_client.get("/homes/local/sessions/auto-compact/").content.decode()
    assert Elements(page).by_id["log-tail"]["data-state"] == "writing"
    assert f"DSH is still writing the log's last {len(torn):,} bytes." in squeezed(page)

    with log.open("ab") as handle:  # the rest of the frame, and the log's end
        handle.write(whole[len(before) + len(torn) :])
    sync_home()
    page = user_client.get("/homes/local/sessions/auto-compact/").content.decode()
    elements = Elements(page)
    assert elements.by_id["context-ring"]["data-percent"] == str(percents[-1])
    assert "log-tail" not in elements.by_id
    assert elements.by_id["session-errors"]["data-tail-bytes"] == "0"
    assert "None: every event so far was read and folded." in squeezed(page)
    assert user_client.get("/api/v1/homes/local/sessions/auto-compact").json()["tailBytes"] == 0


@pytest.mark.django_db
def test_a_reader_error_reads_in_the_pages_language(user_client: Client, home: Path) -> None:
    """A real log with a corrupt frame: the session page in Chinese says what is wrong in
    Chinese (the library's own words and the byte offset as they are); in English, as the
    reader said it."""
    (log,) = home.glob("sessions/*/auto-compact/session.v4.jsonl.zstd")
    frames = frames_of(log)
    bad = len(frames) // 2
    broken = bytearray(frames[bad])
    broken[-1] ^= 0xFF  # its content checksum
    log.write_bytes(b"".join([*frames[:bad], bytes(broken), *frames[bad + 1 :]]))
    offset = sum(len(frame) for frame in frames[:bad])
    sync_home()
    url = "/homes/local/sessions/auto-compact/"

    def card(language: str) -> str:
        page = user_client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
        return squeezed(page[page.index('id="session-errors"') :].split("</section>", 1)[0])

    english, chinese = card("en"), card("zh-CN")
    assert "corrupt zstd frame (" in english and f") (at byte {offset})" in english
    assert "zstd 帧已损坏（" in chinese and f"（位于第 {offset} 字节）" in chinese
    assert "corrupt zstd frame" not in chinese and "at byte" not in chinese
