"""The ledger's pages and the downloads, through Django's test clients.

The downloads are read through the ASGI client (:class:`~django.test.AsyncClient`), as
Daphne serves them: streamed, never collected first (a synchronous iterator would warn,
and warnings fail these tests). Expected rows come from the session folded here with
the core, not from the code under test.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio
from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.template.loader import render_to_string
from django.test import AsyncClient, Client

from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.cost_settings import DEFAULT_PRICE_AS, parse_aliases
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from dshweb.sessions import exports, fragments
from dshweb.sessions.display.ledger_rows import (
    COMPACTION_COLUMNS,
    REFUSED_COLUMNS,
    TIMELINE_COLUMNS,
    Value,
    compaction_rows,
    refused_row,
    timeline_rows,
)
from tests.conftest import FIXTURE_HOMES
from tests.support.compactionlog import long_session, write_session

DOWNLOADS = ("timeline.csv", "timeline.json", "ledger.csv", "ledger.json")
MANY = "many-folds"
DEFAULT_BOOK = RateBook(aliases=parse_aliases(DEFAULT_PRICE_AS))
"""The rates a server uses when nobody sets any: DSH's deepseek-flash as deepseek-v4-flash."""


pytestmark = pytest.mark.usefixtures("fresh_hub", "static_root")


@pytest.fixture
def home(tmp_path: Path, settings: Any) -> Path:
    """Two real fixture sessions, and one with 60 folds (``MANY``)."""
    path = tmp_path / "home"
    (path / "sessions").mkdir(parents=True)
    shutil.copytree(FIXTURE_HOMES / "auto-compact" / "profiles", path / "profiles")
    for name in ("auto-compact", "web-driven"):
        for project in (FIXTURE_HOMES / name / "sessions").iterdir():
            shutil.copytree(project, path / "sessions" / project.name, dirs_exist_ok=True)
    write_session(path, MANY, long_session(steps=600, compaction_every=10))
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": path, "DEMO": False, "PROFILE": "sdk"}
    return path


def _snapshot(home: Path, session_id: str) -> SessionSnapshot:
    index = HomeIndex(home, profile="sdk")
    index.refresh()
    (shot,) = [s for s in index.snapshots() if s.session_id == session_id]
    return shot


def _texts(rows: Iterator[tuple[Value, ...]]) -> list[list[str]]:
    """Rows as CSV gives them back: every value a text, ``None`` empty."""
    return [["" if v is None else str(v) for v in row] for row in rows]


def _objects(columns: tuple[str, ...], rows: Iterator[tuple[Value, ...]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in rows]


async def _download(client: AsyncClient, path: str) -> tuple[Any, list[bytes]]:
    # django-stubs type every test-client response as an HttpResponse; a download is
    # a StreamingHttpResponse, which only the base type leaves room for.
    response: HttpResponseBase = await client.get(path)
    assert response.status_code == 200, response
    assert isinstance(response, StreamingHttpResponse) and response.is_async
    chunks = [chunk async for chunk in cast(AsyncIterator[bytes], response.streaming_content)]
    return response, chunks


@pytest_asyncio.fixture
async def async_user(async_client: AsyncClient, django_user_model: Any) -> AsyncClient:
    user = await django_user_model.objects.acreate(username="viewer")
    await async_client.aforce_login(user)
    return async_client


@pytest.fixture
def user_client(client: Client, django_user_model: Any) -> Client:
    client.force_login(django_user_model.objects.create_user("viewer", password="not-used"))
    return client


# -- downloads --------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", [*DOWNLOADS, "ledger.html"])
def test_anonymous_is_sent_to_sign_in(client: Client, home: Path, name: str) -> None:
    response = client.get(f"/homes/local/sessions/auto-compact/{name}")
    assert response.status_code == 302
    assert (
        response["Location"] == f"/accounts/login/?next=/homes/local/sessions/auto-compact/{name}"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("name", [*DOWNLOADS, "ledger.html"])
def test_only_get(user_client: Client, home: Path, name: str) -> None:
    assert user_client.post(f"/homes/local/sessions/auto-compact/{name}").status_code == 405


@pytest.mark.django_db
@pytest.mark.parametrize("name", DOWNLOADS)
def test_no_such_session(user_client: Client, home: Path, name: str) -> None:
    response = user_client.get(f"/homes/local/sessions/nobody/{name}")
    assert response.status_code == 404
    assert b'id="session-missing"' in response.content


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_timeline_downloads_are_the_ledgers_whole_series(
    async_user: AsyncClient, home: Path
) -> None:
    ledger = _snapshot(home, "auto-compact").ledger
    assert len(ledger.points) > 20 and {p.role for p in ledger.points} >= {"before", "after"}
    response, chunks = await _download(
        async_user, "/homes/local/sessions/auto-compact/timeline.csv"
    )
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="auto-compact-timeline.csv"'
    header, *rows = csv.reader(io.StringIO(b"".join(chunks).decode()))
    assert tuple(header) == TIMELINE_COLUMNS
    assert rows == _texts(timeline_rows(ledger.points))
    assert [int(r[3]) for r in rows] == [p.tokens for p in ledger.points]

    response, chunks = await _download(
        async_user, "/homes/local/sessions/auto-compact/timeline.json"
    )
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="auto-compact-timeline.json"'
    data = json.loads(b"".join(chunks))
    assert (data["session"], data["threshold"]) == ("auto-compact", ledger.threshold)
    assert data["points"] == _objects(TIMELINE_COLUMNS, timeline_rows(ledger.points))
    assert data["points"][0]["time"].endswith("Z")


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("session_id", ["auto-compact", "web-driven", MANY])
async def test_ledger_downloads_are_every_compaction(
    async_user: AsyncClient, home: Path, session_id: str
) -> None:
    ledger = _snapshot(home, session_id).ledger
    _, chunks = await _download(async_user, f"/homes/local/sessions/{session_id}/ledger.csv")
    header, *rows = csv.reader(io.StringIO(b"".join(chunks).decode()))
    assert tuple(header) == COMPACTION_COLUMNS
    assert rows == _texts(compaction_rows(ledger.compactions, DEFAULT_BOOK))
    assert [int(r[0]) for r in rows] == list(range(1, len(ledger.compactions) + 1))

    _, chunks = await _download(async_user, f"/homes/local/sessions/{session_id}/ledger.json")
    data = json.loads(b"".join(chunks))
    assert data["folds"] == _objects(
        COMPACTION_COLUMNS, compaction_rows(ledger.compactions, DEFAULT_BOOK)
    )
    assert data["refused"] == _objects(REFUSED_COLUMNS, map(refused_row, ledger.refused))
    assert len(data["folds"]) == {"auto-compact": 3, "web-driven": 1, MANY: 60}[session_id]
    assert len(data["refused"]) == (1 if session_id == "web-driven" else 0)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_downloads_are_sent_a_batch_of_rows_at_a_time(
    async_user: AsyncClient, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exports, "BATCH", 7)
    ledger = _snapshot(home, MANY).ledger
    _, chunks = await _download(async_user, f"/homes/local/sessions/{MANY}/ledger.csv")
    assert len(chunks) == 1 + -(-60 // 7)  # the header, then 7 rows a chunk
    _, chunks = await _download(async_user, f"/homes/local/sessions/{MANY}/timeline.json")
    assert len(chunks) > len(ledger.points) // 7
    assert len(json.loads(b"".join(chunks))["points"]) == len(ledger.points)


def test_spreadsheet_formulas_in_log_texts_stay_text() -> None:
    assert exports._cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert exports._cell("-x") == "'-x" and exports._cell(-3) == -3
    assert exports._cell("/compact focus") == "/compact focus"
    # after the white space a spreadsheet trims, and in full-width forms
    for text in (" =1+1", "\n=1+1", "\t@SUM(A1)", "\r+1", "\u3000=1", "\uff1dHYPERLINK(1)"):
        assert exports._cell(text) == "'" + text, repr(text)
    assert exports._cell("a =1") == "a =1" and exports._cell("") == ""


def test_file_names_say_the_session_safely() -> None:
    assert exports.file_name('a/b c"d', "ledger.csv") == "a_b_c_d-ledger.csv"
    assert exports.file_name("../..", "timeline.json") == ".._..-timeline.json"
    assert exports.file_name("x" * 500, "ledger.json") == "x" * 80 + "-ledger.json"


# -- the ledger's pages -----------------------------------------------------------------------


def _numbers(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr [^>]*data-fold="(\d+)"', html)]


@pytest.mark.django_db
def test_session_page_shows_the_newest_compactions_first(user_client: Client, home: Path) -> None:
    html = user_client.get(f"/homes/local/sessions/{MANY}/").content.decode()
    ledger = html.split('id="ledger"', 1)[1]
    assert _numbers(ledger) == list(range(60, 35, -1))
    assert "60 compactions" in ledger  # the summary counts every fold
    assert f'href="/homes/local/sessions/{MANY}/ledger.html?before=36"' in ledger
    assert '<div id="ledger-older" class="ledger-older" hx-preserve="true"' in ledger
    for name in ("ledger.csv", "ledger.json", "timeline.csv", "timeline.json"):
        assert f'href="/homes/local/sessions/{MANY}/{name}" download' in html


@pytest.mark.django_db
def test_older_pages_follow_without_javascript(user_client: Client, home: Path) -> None:
    html = user_client.get(f"/homes/local/sessions/{MANY}/ledger.html?before=36").content.decode()
    assert html.startswith("<!doctype html>")
    assert _numbers(html) == list(range(35, 10, -1))
    assert "Folds #35–#11, newest first." in html
    assert "60 compactions" in html
    older = re.search(r'class="page-older" href="([^"]+)"', html)
    newer = re.search(r'class="page-newer" href="([^"]+)"', html)
    assert older and newer
    assert newer[1] == f"/homes/local/sessions/{MANY}/ledger.html?before=61"
    html = user_client.get(older[1]).content.decode()
    assert _numbers(html) == list(range(10, 0, -1))
    assert "page-older" not in html and "page-newer" in html


@pytest.mark.django_db
def test_htmx_gets_the_page_alone(user_client: Client, home: Path) -> None:
    response = user_client.get(
        f"/homes/local/sessions/{MANY}/ledger.html?before=11", headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert "<html" not in html and "ledger-older" not in html.split("<nav", 1)[0]
    assert _numbers(html) == list(range(10, 0, -1))
    assert (
        f'hx-get="/homes/local/sessions/{MANY}/ledger.html?before=36" hx-target="#ledger-older"'
        in html
    )
    restore = user_client.get(
        f"/homes/local/sessions/{MANY}/ledger.html?before=11",
        headers={"HX-Request": "true", "HX-History-Restore-Request": "true"},
    )
    assert restore.content.decode().startswith("<!doctype html>")


@pytest.mark.django_db
@pytest.mark.parametrize("before", ["abc", "1.5", "3e2"])
def test_a_before_that_is_no_number_is_refused(
    user_client: Client, home: Path, before: str
) -> None:
    response = user_client.get(f"/homes/local/sessions/{MANY}/ledger.html?before={before}")
    assert response.status_code == 400
    assert "takes a fold number" in response.content.decode()


@pytest.mark.django_db
def test_refused_commands_are_bounded(home: Path) -> None:
    shot = _snapshot(home, "web-driven")
    (refused,) = shot.ledger.refused
    many = tuple(replace(refused, seq=refused.seq + n) for n in range(12))
    shot = replace(shot, ledger=replace(shot.ledger, refused=many))
    context = fragments.session_context("local", shot, context_gauge(shot))
    html = render_to_string("dashboard/_ledger.html", context)
    seqs = [int(s) for s in re.findall(r'<li data-seq="(\d+)"', html)]
    assert seqs == [refused.seq + n for n in range(11, 6, -1)]
    assert 'data-more="7"' in html and "7 older" in html
    assert f'data-refused="{len(many)}"' in html
