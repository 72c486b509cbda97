"""The live layer through the real ASGI application: login, origin, first state, updates.

A real fixture log is copied into a temporary home cut short by some frames; the test
then appends the rest, frame by frame as DSH does, and waits for the pushed update.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import shutil
import threading
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast
from unittest.mock import patch

import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from channels.testing import HttpCommunicator, WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.asgi import application
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.pages import SessionList
from dshweb.core.listing.query import ListQuery
from dshweb.core.listing.tree import SessionEntry
from dshweb.core.log.home import session_logs
from dshweb.live.publisher import stop_publisher
from dshweb.live.service import sync_home
from dshweb.sessions import fragments
from dshweb.sessions.consumers import SessionConsumer
from dshweb.sessions.display.figures import format_page_tokens
from tests.conftest import FIXTURE_HOMES
from tests.sessions.test_views import TopLevel, make_snapshot
from tests.support.homecopies import copy_as, home_of_copies
from tests.support.logbuilder import frames_of
from tests.support.snapshots import fixture_snapshot

pytestmark = [pytest.mark.django_db(transaction=True)]

ORIGIN = (b"origin", b"http://127.0.0.1:8000")
HOST = (b"host", b"127.0.0.1:8000")
"""The server's own address, as a browser sends it with the handshake."""
ZH = (b"accept-language", b"zh-CN,zh;q=0.9")
NEWS_IDS = {"announcements", "fold-note", "fold-note-local_2f_auto-compact"}
"""What a page hears of a fold or a band (sessions/display/news.py): not parts of a page."""
SOURCE = FIXTURE_HOMES / "auto-compact"
WAIT = 10.0


@pytest.fixture
def home(tmp_path: Path, settings: Any) -> Path:
    """A copy of the auto-compact fixture home whose log stops a third of the way in."""
    target = tmp_path / "home"
    shutil.copytree(SOURCE, target)
    log = session_logs(target)[0].path
    frames = frames_of(log)
    log.write_bytes(b"".join(frames[: len(frames) // 3]))
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": target, "PROFILE": "sdk"}
    return target


@pytest_asyncio.fixture
async def cookie() -> bytes:
    def login() -> str:
        user = get_user_model().objects.create_user("watcher", password="pw-for-tests-only")
        client = Client()
        client.force_login(user)
        return str(client.cookies["sessionid"].value)

    return b"sessionid=" + (await database_sync_to_async(login)()).encode()


@pytest_asyncio.fixture
async def stop() -> AsyncIterator[None]:
    yield
    await stop_publisher()


def _rest_of_log(home: Path) -> tuple[Path, list[bytes]]:
    log = session_logs(home)[0].path
    frames = frames_of(SOURCE / log.relative_to(home))
    return log, frames[len(frames_of(log)) :]


async def _connect(
    path: str, *headers: tuple[bytes, bytes]
) -> tuple[WebsocketCommunicator, bool, Any]:
    if not any(name == b"host" for name, _ in headers):
        headers = (HOST, *headers)
    communicator = WebsocketCommunicator(application, path, headers=list(headers))
    connected, code = await communicator.connect(timeout=WAIT)
    return communicator, connected, code


async def _signed_in(path: str, cookie: bytes) -> tuple[WebsocketCommunicator, str]:
    """A socket of this site's page, signed in with ``cookie``, and its first message."""
    communicator, connected, _ = await _connect(path, ORIGIN, (b"cookie", cookie))
    assert connected is True
    return communicator, await _receive(communicator)


PAGE_PARTS = [
    "session-counts",
    "session-rows",
    "sessions-empty",
    "sessions-none-match",
    "session-pager",
]
"""The top-level elements of a whole list page over the socket, in order."""


def _top_level(html: str) -> list[tuple[str, str]]:
    """Each top-level element's tag and id (every one must have an id)."""
    return [(tag, attrs["id"]) for tag, attrs in TopLevel(html).elements]


def _parts(html: str) -> dict[str, str]:
    """Each top-level element of a message by its id: its whole source text."""
    lines = html.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    found = TopLevel(html)
    offsets = [starts[line - 1] + column for line, column in found.positions]
    ends = [*offsets[1:], len(html)]
    return {
        attrs["id"]: html[start:end].strip()
        for (_, attrs), start, end in zip(found.elements, offsets, ends, strict=True)
    }


def _ring_used(html: str) -> str:
    return _attr(html, "context-ring", "data-used") if "context-ring" in html else ""


def _row_ids(html: str) -> list[str]:
    return re.findall(r'<li id="row-[^"]*"\s[^>]*?data-session-id="([^"]*)"', html)


def _attr(html: str, element_id: str, name: str) -> str:
    match = re.search(rf'<[^>]*id="{re.escape(element_id)}"[^>]*>', html)
    assert match is not None, f"no #{element_id} in {html[:300]}"
    value = re.search(rf'{name}="([^"]*)"', match.group(0))
    assert value is not None
    return value.group(1)


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/ws/sessions/", "/ws/homes/local/sessions/auto-compact/"])
async def test_anonymous_socket_gets_nothing_but_a_close(home: Path, stop: None, path: str) -> None:
    communicator, connected, _ = await _connect(path, ORIGIN)
    assert connected is True
    assert await communicator.receive_output(timeout=WAIT) == {
        "type": "websocket.close",
        "code": 4401,
    }
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_foreign_origin_is_refused(home: Path, cookie: bytes, stop: None) -> None:
    communicator, connected, _ = await _connect(
        "/ws/sessions/", (b"origin", b"http://evil.example"), (b"cookie", cookie)
    )
    assert connected is False
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_missing_origin_is_refused(home: Path, cookie: bytes, stop: None) -> None:
    communicator, connected, _ = await _connect("/ws/sessions/", (b"cookie", cookie))
    assert connected is False
    await communicator.disconnect()


async def _page_status(path: str, cookie: bytes) -> int:
    """The status of a page asked for through the same ASGI application."""
    page = HttpCommunicator(application, "GET", path, headers=[HOST, (b"cookie", cookie)])
    status = int((await page.get_response(timeout=WAIT))["status"])
    await page.wait(timeout=WAIT)  # the request ends (its body file closed)
    return status


def _parameters(count: int) -> str:
    return "&".join(f"p{n}=1" for n in range(count))


@pytest.mark.asyncio
async def test_a_list_socket_with_too_many_parameters_is_refused_as_its_page_is(
    home: Path, cookie: bytes, stop: None, caplog: pytest.LogCaptureFixture
) -> None:
    """Django's limit of 1,000 parameters: the page answers 400, the socket says why in a
    message and closes with 4400; one line in the log, no traceback."""
    query = _parameters(1001)
    communicator, connected, _ = await _connect(
        f"/ws/sessions/?{query}", ORIGIN, (b"cookie", cookie)
    )
    assert connected is True
    said = "Bad request (400): the address has more than 1000 query parameters."
    assert await communicator.receive_output(timeout=WAIT) == {
        "type": "websocket.send",
        "text": said,
    }
    assert await communicator.receive_output(timeout=WAIT) == {
        "type": "websocket.close",
        "code": 4400,
        "reason": said,
    }
    await communicator.disconnect()
    logged = [r for r in caplog.records if r.name.startswith("dshweb")]
    assert [r.getMessage() for r in logged if "refused" in r.getMessage()] == [
        "socket /ws/sessions/ refused (a bad request): The number of GET/POST parameters "
        "exceeded settings.DATA_UPLOAD_MAX_NUMBER_FIELDS."
    ]
    assert not [r for r in logged if r.exc_info or r.levelno >= logging.ERROR]
    assert await _page_status(f"/?{query}", cookie) == 400
    # At the limit, both answer.
    socket, first = await _signed_in(f"/ws/sessions/?{_parameters(1000)}", cookie)
    assert [tag_id for _, tag_id in _top_level(first)] == PAGE_PARTS
    await socket.disconnect()
    assert await _page_status(f"/?{_parameters(1000)}", cookie) == 200


@pytest.mark.asyncio
async def test_list_socket_sends_the_page_then_changed_rows(
    home: Path, cookie: bytes, stop: None
) -> None:
    communicator, first = await _signed_in("/ws/sessions/", cookie)
    row = "row-local_2f_auto-compact"
    assert [tag_id for _, tag_id in _top_level(first)] == PAGE_PARTS
    assert _attr(first, row, "data-session-id") == "auto-compact"
    before = int(_attr(first, row, "data-percent"))
    log, rest = _rest_of_log(home)
    with log.open("ab") as handle:
        for frame in rest:
            handle.write(frame)
    update = await _receive_until(
        communicator, lambda html: row in html and int(_attr(html, row, "data-percent")) != before
    )
    assert _attr(update, row, "data-band") in {"ample", "moderate", "tight", "critical"}
    # The page still holds the same rows: only the changed row (and the counts) come.
    assert {tag_id for _, tag_id in _top_level(update)} - NEWS_IDS <= {row, "session-counts"}
    assert ("li", row) in _top_level(update)
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_list_socket_sends_the_whole_page_when_its_order_changes(
    home: Path, cookie: bytes, stop: None
) -> None:
    # A copy of the whole log is newer than the cut one, until the cut one catches up:
    # then they tie and the id puts "auto-compact" first.
    copy_as(home, session_logs(SOURCE)[0], "auto-compact-whole")
    sync_home()
    communicator, first = await _signed_in("/ws/sessions/", cookie)
    assert _row_ids(first) == ["auto-compact-whole", "auto-compact"]
    log, rest = _rest_of_log(home)
    for frame in rest:
        with log.open("ab") as handle:
            handle.write(frame)
        await asyncio.sleep(0.01)
    seen: list[str] = []

    def reordered(html: str) -> bool:
        seen.append(html)
        return 'id="session-rows"' in html

    update = await _receive_until(communicator, reordered)
    assert _row_ids(update) == ["auto-compact", "auto-compact-whole"]
    assert [tag_id for _, tag_id in _top_level(update)] == PAGE_PARTS
    for earlier in seen[:-1]:  # while the order held, rows alone
        assert {tag_id for _, tag_id in _top_level(earlier)} - NEWS_IDS <= {
            "row-local_2f_auto-compact",
            "session-counts",
        }
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_session_socket_follows_appended_frames(
    home: Path, cookie: bytes, stop: None
) -> None:
    communicator, first = await _signed_in("/ws/homes/local/sessions/auto-compact/", cookie)
    seen = [_attr(first, "context-ring", "data-used")]
    log, rest = _rest_of_log(home)
    for frame in rest:
        with log.open("ab") as handle:
            handle.write(frame)
        await asyncio.sleep(0.01)
    final = await _receive_until(
        communicator,
        lambda html: "context-ring" in html and _attr(html, "context-ring", "data-used") == "9771",
    )
    seen.append(_attr(final, "context-ring", "data-used"))
    assert seen[0] != seen[-1]
    assert _attr(final, "context-ring", "data-percent") == "41"
    assert _attr(final, "context-ring", "data-threshold") == "12000"
    assert _attr(final, "breakdown", "data-system") == "645"
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_a_session_update_holds_only_the_parts_that_changed(
    home: Path, cookie: bytes, stop: None
) -> None:
    from dshweb.sessions.fragments import LIVE_PARTS
    from tests.support.snapshots import LIVE_PART_IDS

    communicator, first = await _signed_in("/ws/homes/local/sessions/auto-compact/", cookie)
    ids = list(LIVE_PART_IDS)
    assert len(ids) == len(LIVE_PARTS)
    assert all(f'id="{part}"' in first for part in ids)  # the first message: every part
    compactions = _attr(first, "ledger", "data-folds")
    log, rest = _rest_of_log(home)
    updates: list[str] = []
    for frame in rest:
        with log.open("ab") as handle:
            handle.write(frame)
        await asyncio.sleep(0.01)
    while not updates or "9771" not in _ring_used(updates[-1]):
        updates.append(await _receive(communicator))
    # However the frames were batched into updates, no part is sent again unchanged: each
    # part of an update differs from the last one the page got (the errors card never
    # changes here, so it is never sent again); the ledger is, at the folds the rest of
    # the log holds.
    held = _parts(first)
    for update in updates:
        for part_id, part in _parts(update).items():
            if part_id in NEWS_IDS:
                continue  # what the page hears of a fold or a band (not a part)
            assert part != held[part_id], f"#{part_id} sent again unchanged"
            held[part_id] = part
    assert not any('id="session-errors"' in update for update in updates)
    with_ledger = [u for u in updates if 'id="ledger"' in u]
    assert with_ledger
    assert _attr(with_ledger[-1], "ledger", "data-folds") != compactions
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_unknown_session_socket_says_gone(home: Path, cookie: bytes, stop: None) -> None:
    communicator, first = await _signed_in("/ws/homes/local/sessions/nope/", cookie)
    assert _attr(first, "live-status", "data-state") == "gone"
    await communicator.disconnect()


async def _receive(communicator: WebsocketCommunicator, timeout: float = WAIT) -> str:
    message = await communicator.receive_from(timeout=timeout)
    assert isinstance(message, str)
    return message


async def _receive_until(communicator: WebsocketCommunicator, wanted: Any) -> str:
    deadline = asyncio.get_running_loop().time() + WAIT
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        assert remaining > 0, "no such update arrived"
        html = await _receive(communicator, remaining)
        if wanted(html):
            return html


@pytest.mark.asyncio
async def test_a_saved_profile_patch_moves_the_compaction_point(
    home: Path, cookie: bytes, stop: None
) -> None:
    communicator, first = await _signed_in("/ws/homes/local/sessions/auto-compact/", cookie)
    assert _attr(first, "context-ring", "data-threshold") == "12000"
    assert _attr(first, "context-ring", "data-threshold-source") == "profile"
    patch = home / "profiles" / "sdk" / "cordis.patch.yml"
    patch.write_text(
        patch.read_text().replace("thresholdRatio: 0.5", "thresholdRatio: 0.25"), "utf-8"
    )
    update = await _receive_until(communicator, lambda html: "the profile says 6,000" in html)
    # The profile's point moved to 6,000, but the engine let this session's requests out
    # above it (under the point it ran with, 12,000): the ring goes by what the engine
    # did (no fold yet in this third of the log: only how low the point is not) and says
    # what the profile says.
    assert _attr(update, "context-ring", "data-threshold-source") == "inferred"
    low = int(_attr(update, "context-ring", "data-threshold-low"))
    assert 6_000 < low <= 12_000
    assert _attr(update, "context-ring", "data-threshold-high") == ""
    assert _attr(update, "context-ring", "data-threshold") == ""
    assert f"at least {low:,} tokens (no fold yet)" in update
    assert "the profile says 6,000, which the engine did not go by" in update
    await communicator.disconnect()


def test_subscriptions_count_sockets() -> None:
    from dshweb.live.subscriptions import Subscriptions

    subs = Subscriptions()
    assert subs.watched("g") is False
    subs.add("g")
    subs.add("g")
    subs.remove("g")
    assert subs.watched("g") is True
    subs.remove("g")
    assert subs.watched("g") is False


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/ws/nope/", "/ws/", "/", "/ws/sessions"])
async def test_an_unknown_socket_path_is_closed_as_not_found(
    home: Path, cookie: bytes, stop: None, path: str
) -> None:
    for headers in ((ORIGIN, (b"cookie", cookie)), (ORIGIN,)):
        communicator, connected, _ = await _connect(path, *headers)
        assert connected is True
        assert await communicator.receive_output(timeout=WAIT) == {
            "type": "websocket.close",
            "code": 4404,
        }
        await communicator.disconnect()


# --- a big home: one page per message, never the whole list ------------------------

BIG = 600
MESSAGE_LIMIT = 256 * 1024
"""The promise: no socket message over 256 KB at any home size (Daphne's own limit is
1 MiB; the whole list of this home is more)."""


_SHOT = make_snapshot("s", 1)
_READING = context_gauge(_SHOT)


def _copies(start: int, stop: int) -> list[str]:
    return [f"copy-{number:04}" for number in range(start, stop)]


@pytest.fixture
def big_home(tmp_path: Path, settings: Any) -> Path:
    """600 copies of a real session (the same times: the list orders them by id)."""
    target = home_of_copies(FIXTURE_HOMES / "plain-turns", tmp_path / "big", BIG)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": target, "PROFILE": "sdk"}
    return target


def _size(html: str) -> int:
    return len(html.encode())


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("query", "rows"),
    [
        ("", _copies(0, 50)),
        ("?page=3&per_page=100", _copies(200, 300)),
        ("?q=copy-05&sort=percent", _copies(500, 550)),
        ("?page=999", _copies(550, 600)),  # clamped to the last page
        ("?q=copy-0007+hello&state=idle&band=ample", ["copy-0007"]),
        ("?q=no-such-session", []),
    ],
)
async def test_list_socket_sends_only_its_page(
    big_home: Path, cookie: bytes, stop: None, query: str, rows: list[str]
) -> None:
    sync_home()
    communicator, first = await _signed_in("/ws/sessions/" + query, cookie)
    assert _size(first) < MESSAGE_LIMIT
    assert _row_ids(first) == rows
    assert [tag_id for _, tag_id in _top_level(first)] == PAGE_PARTS
    assert _attr(first, "session-count", "data-total") == str(BIG)
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_no_list_message_is_over_the_limit(big_home: Path, cookie: bytes, stop: None) -> None:
    view = sync_home()
    # The whole list at once (what the socket sent before it paged) would be far over it.
    assert _size(fragments.rows_html(list(view.tree), False)) > 3 * MESSAGE_LIMIT
    communicator, first = await _signed_in("/ws/sessions/?per_page=100", cookie)
    assert _size(first) < MESSAGE_LIMIT
    assert _row_ids(first) == _copies(0, 100)
    # A session leaves the page: the page comes again, one more row moved up into it.
    shutil.rmtree(next(big_home.glob("sessions/*/copy-0003")))
    sync_home()
    update = await _receive_until(communicator, lambda html: 'id="session-rows"' in html)
    assert _size(update) < MESSAGE_LIMIT
    assert _row_ids(update) == [*_copies(0, 3), *_copies(4, 101)]
    assert _attr(update, "session-count", "data-total") == str(BIG - 1)
    await communicator.disconnect()


def test_a_list_row_keeps_no_older_snapshot_alive() -> None:
    # A session that keeps changing for ten minutes: its row is rendered for each
    # snapshot and each minute, and only the newest rendering (and snapshot) is kept.
    for minute in range(10):
        for version in range(3):
            shot = replace(_SHOT, session_id="kept-row", last_time=minute * 60 + version)
            with patch("time.time", return_value=minute * 60.0 + version):
                html = fragments.row_html(SessionEntry(shot, _READING, 0, False), False)
            assert "kept-row" in html
    del shot
    gc.collect()
    alive = [
        o for o in gc.get_objects() if isinstance(o, SessionSnapshot) and o.session_id == "kept-row"
    ]
    assert [o.last_time for o in alive] == [9 * 60 + 2]


def test_a_page_too_big_for_one_message_comes_in_pieces() -> None:
    entries = [
        SessionEntry(replace(_SHOT, session_id=f"s-{n:03}", last_time=1000 - n), _READING, 0, False)
        for n in range(100)
    ]
    page = SessionList(entries).page(ListQuery(per_page=100))
    (whole,) = fragments.list_page_messages(page)
    limit = _size(whole) // 4
    with patch.object(fragments, "MESSAGE_MAX", limit):
        messages = fragments.list_page_messages(page)
    assert len(messages) >= 4
    assert all(_size(message) <= limit for message in messages)
    # The page without its rows, then the rows appended to the list in order.
    assert [tag_id for _, tag_id in _top_level(messages[0])] == PAGE_PARTS
    assert _row_ids(messages[0]) == []
    for message in messages[1:]:
        assert message.startswith('<ol id="session-rows" hx-swap-oob="beforeend">')
        assert [tag for tag, _ in _top_level(message)] == ["ol"]
    assert [r for message in messages for r in _row_ids(message)] == _row_ids(whole)
    assert len(_row_ids(whole)) == 100


class _GatedConsumer(SessionConsumer):
    """A session socket whose render waits for the test, recording what it was asked."""

    def __init__(self) -> None:
        route = {"args": (), "kwargs": {"home": "h", "session_id": "s"}}
        self.scope = cast(Any, {"path": "/ws/test/", "url_route": route})
        self.gate = threading.Event()
        self.asked: list[int | None] = []
        self.sent: list[str] = []

    def current_html(self, version: int | None = None) -> str:
        self.gate.wait(WAIT)
        self.asked.append(version)
        return f"state at {version}"

    async def send(  # type: ignore[override]  # AsyncWebsocketConsumer's, as Channels has it
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False
    ) -> None:
        self.sent.append(str(text_data))


@pytest.mark.asyncio
async def test_announcements_during_a_render_become_one_render_of_the_newest() -> None:
    consumer = _GatedConsumer()
    for version in (3, 4, 6, 5):
        await consumer.session_changed({"type": "session.changed", "version": version})
        await asyncio.sleep(0.02)  # the first render has started and waits at the gate
    consumer.gate.set()
    for _ in range(100):
        if consumer.renders.idle:
            break
        await asyncio.sleep(0.02)
    # The first announcement's render, then one for the three that came while it ran.
    assert consumer.asked == [3, 6]
    assert consumer.sent == ["state at 3", "state at 6"]


@pytest.mark.asyncio
async def test_each_socket_speaks_its_pages_language(home: Path, cookie: bytes, stop: None) -> None:
    """Two pages of the same session, one in Chinese (by Accept-Language, then by the
    switch's cookie) and one in English: each is sent its parts, and each update, in its
    own language, though the parts are rendered once per version and language."""
    path = "/ws/homes/local/sessions/auto-compact/"
    chinese, _, _ = await _connect(path, ORIGIN, (b"cookie", cookie), ZH)
    english, _, _ = await _connect(path, ORIGIN, (b"cookie", cookie), (b"accept-language", b"en"))
    switched, _, _ = await _connect(
        path,
        ORIGIN,
        (b"cookie", cookie + b"; django_language=zh-hans"),
        (b"accept-language", b"en"),
    )
    firsts = [await _receive(c) for c in (chinese, english, switched)]
    assert "压缩账本" in firsts[0] and "Compaction ledger" not in firsts[0]
    assert "Compaction ledger" in firsts[1] and "压缩账本" not in firsts[1]
    assert "压缩账本" in firsts[2]
    log, rest = _rest_of_log(home)
    with log.open("ab") as handle:
        for frame in rest:
            handle.write(frame)

    def final(html: str) -> bool:
        return "context-ring" in html and _attr(html, "context-ring", "data-used") == "9771"

    zh_update = await _receive_until(chinese, final)
    en_update = await _receive_until(english, final)
    assert "of the context window used" in en_update and "上下文窗口" not in en_update
    assert "上下文窗口已用" in zh_update and "of the context window used" not in zh_update
    for communicator in (chinese, english, switched):
        await communicator.disconnect()


def _announced(html: str) -> str | None:
    found = re.search(r'<div id="announcements" hx-swap-oob="innerHTML">([^<]*)</div>', html)
    return None if found is None else found.group(1)


@pytest.mark.asyncio
async def test_a_compaction_that_lands_is_noted_and_announced(
    home: Path, cookie: bytes, stop: None
) -> None:
    """While a session page and the list are open, each fold that lands puts a note on the
    ring (and in the row) saying what it freed, and the live region says it; the figures
    are the fold's own, as the whole log's ledger has them."""
    final = {f.seq: f for f in fixture_snapshot("auto-compact").ledger.compactions}
    page, first = await _signed_in("/ws/homes/local/sessions/auto-compact/", cookie)
    listing, _ = await _signed_in("/ws/sessions/", cookie)
    assert _announced(first) is None  # a page load hears nothing
    log, rest = _rest_of_log(home)
    for frame in rest:
        with log.open("ab") as handle:
            handle.write(frame)
        await asyncio.sleep(0.01)
    said = await _receive_until(page, lambda html: "Folded just now" in (_announced(html) or ""))
    note = re.search(
        r'<p class="fold-landed" id="fold-note" data-fold-seq="(\d+)"\s+'
        r'data-before="(\d+)" data-after="(\d+)">([^<]*)</p>',
        said,
    )
    assert note is not None, said
    compaction = final[int(note[1])]  # the compaction as the whole log's ledger has it
    before, after = compaction.before, compaction.after
    assert (int(note[2]), int(note[3])) == (before, after)
    assert before is not None and after is not None
    words = f"Folded just now: {format_page_tokens(before)} → {format_page_tokens(after)}"
    assert note[4] == words and _announced(said) == words
    row_said = await _receive_until(
        listing, lambda html: "Folded just now" in (_announced(html) or "")
    )
    assert re.fullmatch(r"[^:]+: Folded just now: \S+ → \S+", _announced(row_said) or "")
    assert 'id="fold-note-local_2f_auto-compact"' in row_said
    for communicator in (page, listing):
        await communicator.disconnect()
