"""The Compact button: who may press it, one request in flight per session, the status
line, the audit record, and — with the real ``dsh web`` and the tests' fake model — a
session folded through the dashboard, and a busy session refused."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import translation

from dshweb.collect import owners
from dshweb.compaction import service
from dshweb.compaction import status as compact_status
from dshweb.compaction.models import CompactionRequest, DshWebSetting
from dshweb.compaction.records import RequestRecord
from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.ledger import Ledger
from dshweb.core.said import say
from dshweb.live.publisher import stop_publisher
from dshweb.live.service import home_view
from dshweb.sessions.display.compact_status import compact_view, result_line
from tests.conftest import FIXTURE_HOMES
from tests.dsh_web.test_client import (
    Setup,
    SlowTurns,
    create,
    engine_setup,
    prompt,
    turns_at_least,
)
from tests.live.test_sockets import ORIGIN, _attr, _connect, _receive, _receive_until

pytestmark = pytest.mark.django_db(transaction=True)

MANUAL = Compaction(kind="manual", seq=69, time=1, end_seq=73, before=6152, after=5897)
OPEN = Compaction(kind="manual", seq=69, time=1)
BROKEN = Compaction(kind="manual", seq=69, time=1, end_seq=73, error="summary is not smaller")


@pytest.mark.parametrize(
    ("record", "compactions", "state", "text"),
    [
        (None, (), "idle", ""),
        (RequestRecord("requested", "", "", 68), (), "requested", "Compaction requested…"),
        (
            RequestRecord("requested", "", "", 68),
            (OPEN,),
            "running",
            "Compacting: DSH's engine is summarising…",
        ),
        (RequestRecord("requested", "", "", 70), (MANUAL,), "requested", "Compaction requested…"),
        (
            RequestRecord("done", "done", "Compacted 14 history items (~426 tokens).", 68),
            (MANUAL,),
            "done",
            "Compacted 14 history items (~426 tokens); context 6.2K → 5.9K (freed 255)",
        ),
        (
            RequestRecord("done", "done", "Compacted 7 history items (~3318 tokens).", 68),
            (),
            "done",
            "Compacted 7 history items (~3,318 tokens)",
        ),
        (
            RequestRecord("failed", "busy", "Compaction is unavailable …", 68),
            (),
            "failed",
            "The session is busy: its agent is not idle. Try again when it is idle.",
        ),
        (
            RequestRecord("failed", "engine_error", "x", 68),
            (BROKEN,),
            "failed",
            "The compaction failed: summary is not smaller",
        ),
        (
            RequestRecord("failed", "engine_error", "not configured: no engine", 68),
            (),
            "failed",
            "The DSH engine refused — not configured: no engine",
        ),
    ],
)
def test_status_line(
    record: RequestRecord | None, compactions: tuple[Compaction, ...], state: str, text: str
) -> None:
    view = compact_view(record, Ledger(compactions=compactions))
    assert (view.state, view.text) == (state, text)


def test_result_line_without_numbers() -> None:
    assert result_line("", None) == "Compacted"


@pytest.fixture
def home(tmp_path: Path, settings: Any) -> Path:
    import shutil

    target = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "manual-compact", target)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": target, "ENGINE_URL": "", "ENGINE": ""}
    return target


@pytest.fixture(autouse=True)
def _no_kept_requests() -> Iterator[None]:
    """The requests compaction/status.py keeps in memory outlive the database each test
    empties."""
    compact_status.forget_records()
    yield
    compact_status.forget_records()


def _user(name: str, *, may_compact: bool) -> Client:
    user = User.objects.create_user(name, password="x-x-x-x-1")
    if may_compact:
        user.user_permissions.add(Permission.objects.get(codename="compact"))
    client = Client()
    client.force_login(user)
    return client


def _wait_finished(timeout: float = 60) -> CompactionRequest:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        request = CompactionRequest.objects.first()
        if request is not None and not request.in_flight:
            return request
        time.sleep(0.05)
    raise AssertionError("the compaction request did not finish")


URL = "/homes/local/sessions/manual-compact/compact/"
PAGE = "/homes/local/sessions/manual-compact/"


def _status_line(html: str) -> tuple[str, str]:
    """The Compact card's status line as a person sees it: its state and its text."""
    found = re.search(r'<div id="compact-status" [^>]*data-state="(\w+)"[^>]*>([^<]*)</div>', html)
    assert found is not None, "no status line on the page"
    return found.group(1), found.group(2)


def test_only_users_allowed_to_compact_may(home: Path) -> None:
    assert Client().post(URL).status_code == 302  # to the login page
    refused = _user("viewer", may_compact=False).post(URL)
    assert refused.status_code == 403
    assert "Your account may not compact sessions." in refused.content.decode()
    page = _user("viewer2", may_compact=False).get(PAGE).content.decode()
    assert 'id="compact-button"' not in page and 'id="compact-status"' in page
    assert CompactionRequest.objects.count() == 0


def test_the_button_needs_csrf(home: Path) -> None:
    user = User.objects.create_user("strict", password="x-x-x-x-1")
    user.user_permissions.add(Permission.objects.get(codename="compact"))
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(URL).status_code == 403
    assert CompactionRequest.objects.count() == 0


def test_without_an_engine_the_button_is_disabled_and_says_where_to_set_one(home: Path) -> None:
    page = _user("boss", may_compact=True).get(PAGE).content.decode()
    button = re.search(r'<button [^>]*id="compact-button"[^>]*>', page)
    assert button is not None and 'aria-disabled="true"' in button.group(0)
    assert 'type="button"' in button.group(0)  # it submits nothing
    assert 'aria-describedby="compact-why"' in button.group(0)
    why = re.search(r'<small [^>]*id="compact-why"[^>]*>(.*?)</small>', page, re.S)
    assert why is not None and "No DSH engine is set up for this home" in why.group(1)
    assert "href=" not in why.group(1)  # not staff: an administrator sets it up
    staff = User.objects.create_user("admin2", password="x-x-x-x-1", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="compact"))
    client = Client()
    client.force_login(staff)
    assert 'href="/settings/engine/"' in client.get(PAGE).content.decode()
    DshWebSetting.objects.create(mode="url", launch_url="http://127.0.0.1:9/?token=x")
    button = re.search(r'<button [^>]*id="compact-button"[^>]*>', client.get(PAGE).content.decode())
    assert button is not None and "disabled" not in button.group(0)
    assert 'type="submit"' in button.group(0)


def test_without_an_engine_the_request_fails_with_the_reason(home: Path) -> None:
    client = _user("boss", may_compact=True)
    assert 'id="compact-button"' in client.get(PAGE).content.decode()
    assert client.post(URL, HTTP_HX_REQUEST="true").status_code == 204
    request = _wait_finished()
    assert (request.state, request.outcome) == ("failed", "engine_error")
    assert "no DSH engine is configured" in request.message
    assert request.user is not None and request.user.username == "boss"
    state, text = _status_line(client.get(PAGE).content.decode())
    assert state == "failed" and "no DSH engine is configured" in text


@pytest.mark.asyncio
async def test_an_open_page_is_told_each_state_of_a_press(home: Path) -> None:
    client = await database_sync_to_async(_user)("boss", may_compact=True)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    page, connected, _ = await _connect(f"/ws{PAGE}", ORIGIN, cookie)
    assert connected is True
    try:
        assert _attr(await _receive(page), "compact-status", "data-state") == "idle"
        press = await database_sync_to_async(client.post)(URL, HTTP_HX_REQUEST="true")
        assert press.status_code == 204  # the form swaps nothing: the socket brings the line
        pushed = await _receive_until(page, lambda html: 'data-state="failed"' in html)
        assert _status_line(pushed) == (
            "failed",
            "The DSH engine refused — not configured: no DSH engine is configured "
            "(Settings → Engine)",
        )
    finally:
        await page.disconnect()
        await stop_publisher()


def test_a_second_press_while_one_runs_is_refused(home: Path) -> None:
    client = _user("boss", may_compact=True)
    reading = home_view().session("manual-compact")
    assert reading is not None
    CompactionRequest.objects.create(
        session_id="manual-compact",
        state="requested",
        seq_at_request=reading.last_seq,
        owner=owners.process_owner(),
    )
    assert client.post(URL, HTTP_HX_REQUEST="true").status_code == 204
    assert client.post(URL)["Location"] == PAGE  # without JavaScript: back to the page
    assert CompactionRequest.objects.count() == 1
    # What the page says, now and on every open copy of it: the request in flight.
    assert _status_line(client.get(PAGE).content.decode()) == (
        "requested",
        "Compaction requested…",
    )


def test_a_page_load_says_what_the_database_has_not_what_was_kept(home: Path) -> None:
    """Another process may have changed the request without this one hearing of it: the
    page reads it afresh, and the sockets then read what the page read."""
    client = _user("viewer", may_compact=False)
    assert _status_line(client.get(PAGE).content.decode()) == ("idle", "")
    compact_status.remember("local", "manual-compact", None)  # kept: no request
    reading = home_view().session("manual-compact")
    assert reading is not None
    CompactionRequest.objects.create(  # by another process, never announced here
        session_id="manual-compact", state="requested", seq_at_request=reading.last_seq
    )
    assert _status_line(client.get(PAGE).content.decode()) == (
        "requested",
        "Compaction requested…",
    )
    kept = compact_status.latest_record("local", "manual-compact")
    assert kept is not None and kept.state == "requested"


def _dead_pid() -> int:
    """The pid of a real process that has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("owner", ["dead", "reused pid", "before owners"])
def test_a_request_a_stopped_dshweb_left_in_flight_is_closed_with_a_reason(
    home: Path, owner: str
) -> None:
    here = owners.process_owner().rsplit(":", 2)
    recorded = {
        "dead": f"{here[0]}:{_dead_pid()}:gone",
        "reused pid": f"{here[0]}:{here[1]}:an-earlier-process",
        "before owners": "",
    }[owner]
    stale = CompactionRequest.objects.create(
        session_id="manual-compact", state="requested", owner=recorded
    )
    client = _user("boss", may_compact=True)
    client.post(URL, HTTP_HX_REQUEST="true")
    stale.refresh_from_db()
    assert (stale.state, stale.outcome) == ("failed", "abandoned")
    assert stale.message.startswith("dshweb stopped while this ran")
    assert stale.finished_at is not None
    assert CompactionRequest.objects.count() == 2
    assert _wait_finished().outcome == "engine_error"  # the new press ran (no engine here)


def test_a_request_a_stop_cut_short_is_closed_saying_so_unless_it_ended(home: Path) -> None:
    ended = CompactionRequest.objects.create(
        session_id="manual-compact", state="done", message="Compacted 3 history items"
    )
    running = CompactionRequest.objects.create(
        session_id="manual-compact", state="running", owner=owners.process_owner()
    )
    assert service.close_interrupted_request(running.pk)
    assert not service.close_interrupted_request(ended.pk)
    running.refresh_from_db()
    assert (running.state, running.outcome) == ("failed", "abandoned")
    assert running.message == service.ABANDONED_MESSAGE and running.finished_at is not None
    ended.refresh_from_db()
    assert (ended.state, ended.message) == ("done", "Compacted 3 history items")
    # What the button's status line says of it (the latest request).
    assert _status_line(_user("viewer", may_compact=False).get(PAGE).content.decode()) == (
        "failed",
        "dshweb stopped while this ran; the session log shows whether DSH folded it.",
    )


def test_an_engine_that_never_answers_fails_the_press_in_seconds(
    home: Path, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    monkeypatch.setattr("dshweb.dsh_web.client.LOGIN_TIMEOUT", 2.0, raising=False)
    listener = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    try:
        port = listener.getsockname()[1]
        settings.DSHWEB = {**settings.DSHWEB, "ENGINE_URL": f"http://127.0.0.1:{port}/?token=t"}
        started = time.monotonic()
        _user("boss", may_compact=True).post(URL, HTTP_HX_REQUEST="true")
        request = _wait_finished(timeout=20)
    finally:
        listener.close()
    assert time.monotonic() - started < 10
    assert (request.state, request.outcome) == ("failed", "unreachable")
    assert "does not answer (hung?)" in request.message


def test_unknown_session_is_404(home: Path) -> None:
    assert (
        _user("boss", may_compact=True).post("/homes/local/sessions/nope/compact/").status_code
        == 404
    )


def test_engine_settings_never_show_the_token(home: Path) -> None:
    admin = Client()
    admin.force_login(User.objects.create_user("root", password="x-x-x-x-1", is_staff=True))
    secret = "http://127.0.0.1:9/?token=very-secret-token"
    response = admin.post("/settings/engine/", {"mode": "url", "launch_url": secret, "test": "1"})
    page = response.content.decode()
    assert "very-secret-token" not in page
    assert 'data-status="unreachable"' in page
    assert DshWebSetting.objects.get().launch_url == secret
    assert "very-secret-token" not in admin.get("/settings/engine/").content.decode()
    bad = admin.post(
        "/settings/engine/", {"mode": "url", "launch_url": "http://example.com/?token=x"}
    )
    assert "loopback" in bad.content.decode().lower()


def test_the_engine_page_says_what_is_wrong_in_the_pages_language(home: Path) -> None:
    """Asked for in Chinese, the engine page says a failed connection test and a launch
    URL it refuses in Chinese (the address and the system's own words as they are)."""
    admin = Client(HTTP_ACCEPT_LANGUAGE="zh-CN")
    admin.force_login(User.objects.create_user("root", password="x-x-x-x-1", is_staff=True))
    tested = admin.post(
        "/settings/engine/",
        {"mode": "url", "launch_url": "http://127.0.0.1:9/?token=t", "test": "1"},
    ).content.decode()
    check = tested[tested.index('id="engine-check"') :].split("</p>", 1)[0]
    assert "无法连接：无法连接到 http://127.0.0.1:9：" in " ".join(check.split())
    assert "cannot connect" not in check and "unreachable" not in check.split(">", 1)[1]
    refused = admin.post(
        "/settings/engine/", {"mode": "url", "launch_url": "http://example.com/?token=x"}
    ).content.decode()
    assert (
        "启动地址的主机须是回环地址（127.0.0.1、::1 或 localhost），而不是 &#x27;example.com&#x27;"
        in (refused)
    )
    assert "must be loopback" not in refused


def test_a_failed_compaction_says_why_in_the_pages_language() -> None:
    """The Compact card's line for a request that failed: its reason and DSH engine's
    answer as dshweb said it, in the page's language."""
    record = RequestRecord(
        state="failed",
        outcome="unreachable",
        message=say(
            "engine-cannot-connect", base="http://127.0.0.1:9", reason="Connection refused"
        ),
        seq_at_request=0,
    )
    with translation.override("zh-hans"):
        view = compact_view(record, None)
    assert view.text.endswith("无法连接到 http://127.0.0.1:9：Connection refused")
    assert "cannot connect" not in view.text


# -- with the real dsh web -----------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with engine_setup(tmp_path_factory.mktemp("compact"), SlowTurns()) as ready:
        yield ready


@pytest.fixture
def live(engine: Setup, settings: Any) -> Setup:
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": engine.home, "ENGINE_URL": engine.launch_url}
    return engine


@pytest.mark.dsh
def test_compact_through_the_dashboard(live: Setup) -> None:
    from tests.fixtures.dshrun import session_logs, wait_for_log

    api = live.client()
    create(live, api, "s-dash")
    for turn in (1, 2, 3):
        prompt(api, "s-dash", f"turn {turn}: " + "words " * 400)
        wait_for_log(live.home, "s-dash", turns_at_least(turn), timeout=30)
    before = home_view().session("s-dash")
    assert before is not None
    client = _user("boss", may_compact=True)
    assert (
        client.post("/homes/local/sessions/s-dash/compact/", HTTP_HX_REQUEST="true").status_code
        == 204
    )
    request = _wait_finished()
    assert (request.state, request.outcome) == ("done", "done"), request.message
    log = wait_for_log(live.home, "s-dash", lambda log: log.count("command/done") >= 1)
    (start,) = log.of_type("compaction/start")
    (end,) = log.of_type("compaction/end")
    (done,) = log.of_type("command/done")
    assert start["data"]["turn"] is None and "error" not in end["data"]
    assert done["data"]["kind"] == "success" and done["data"]["text"] == request.message
    after = home_view().session("s-dash")
    assert after is not None
    (compaction,) = [f for f in after.ledger.compactions if f.kind == "manual"]
    assert (
        request.projected_before == before.context_pressure["projectedTokens"] == compaction.before
    )
    assert after.context_pressure["projectedTokens"] == compaction.after
    assert compaction.after < compaction.before  # both narrowed to int by the two lines above
    assert request.duration_seconds is not None and request.duration_seconds < 60
    assert f'"command_id": "{done["data"]["commandId"]}"' in request.dsh_web_answer
    assert live.token not in request.dsh_web_answer
    page = client.get("/homes/local/sessions/s-dash/").content.decode()
    assert _status_line(page) == ("done", result_line(request.message, compaction))
    assert result_line(request.message, compaction).startswith("Compacted ")
    assert session_logs(live.home)["s-dash"].count("compaction/end") == 1


@pytest.mark.dsh
def test_compact_while_a_turn_runs_says_busy(live: Setup) -> None:
    from tests.fixtures.dshrun import wait_for_log

    api = live.client()
    create(live, api, "s-busy-dash")
    live.script.slow_turn()
    prompt(api, "s-busy-dash", "!slow please")
    assert live.script.arrived.wait(30)
    client = _user("boss", may_compact=True)
    try:
        client.post("/homes/local/sessions/s-busy-dash/compact/", HTTP_HX_REQUEST="true")
        request = _wait_finished()
    finally:
        live.script.release()
    assert (request.state, request.outcome) == ("failed", "busy")
    wait_for_log(live.home, "s-busy-dash", turns_at_least(1), timeout=30)
    page = client.get("/homes/local/sessions/s-busy-dash/").content.decode()
    assert "The session is busy" in page and 'data-state="failed"' in page


def test_admins_see_the_audit(home: Path) -> None:
    CompactionRequest.objects.create(
        session_id="manual-compact", state="failed", outcome="busy", message="busy text"
    )
    admin_client = Client()
    admin_client.force_login(User.objects.create_superuser("root", password="x-x-x-x-1"))
    page = admin_client.get("/admin/compaction/compactionrequest/").content.decode()
    assert "manual-compact" in page and "busy" in page
    viewer = _user("viewer", may_compact=True)
    assert viewer.get("/admin/compaction/compactionrequest/").status_code == 302
