"""A web worker (``DSHWEB_COLLECT=off``) in one process: its view of every collected home
follows the rows at the cost of what changed, its pages say which home each session is
of and whether its collector is online, and it never starts a hub nor reads a home
(dshweb.collect.worker)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.test import Client, override_settings

from dshweb.collect import commands, worker
from dshweb.collect.collected import sealing_key
from dshweb.collect.collector import SessionWriter
from dshweb.collect.commands import (
    CollectorPlace,
    CollectorSilent,
    collector_owner,
    open_sealed,
)
from dshweb.collect.lease import Lease, lease_release, lease_take
from dshweb.collect.models import CollectorLease
from dshweb.collect.shown import shown_homes, shown_session
from dshweb.compaction import service as compact
from dshweb.compaction.models import CompactionRequest
from dshweb.core.log.home import session_logs
from dshweb.core.settings.patchfile import read_patch, row_config
from dshweb.environment import ConfigurationError, collect
from dshweb.live import service
from dshweb.live.hub import HomeChange, HomeView, Hub
from dshweb.live.protocol import collector_group, session_group
from dshweb.profiles import remote as remote_settings
from dshweb.profiles.models import PatchRevision
from tests.conftest import FIXTURE_HOMES
from tests.support.logbuilder import frames_of
from tests.support.visitor import form_fields

pytestmark = [pytest.mark.django_db(transaction=True)]


def _sessions(view: HomeView) -> dict[str, object]:
    return {sid: (dataclasses.asdict(v.snapshot), v.gauge) for sid, v in view.sessions.items()}


@pytest.fixture
def off(tmp_path: Path, fresh_hub: None) -> Iterator[None]:
    """This process is a web worker whose DSH home does not exist."""
    config = {**settings.DSHWEB, "COLLECT": False, "DSH_HOME": tmp_path / "no-such-home"}
    with override_settings(DSHWEB=config):
        yield
    worker.forget_worker_homes()


@dataclasses.dataclass
class Collected:
    hub: Hub
    writer: SessionWriter
    lease: Lease
    rest: dict[Path, bytes]

    def write(self) -> None:
        self.hub.sync()
        self.writer.flush()


def _collect(tmp_path: Path, name: str = "h") -> Collected:
    """A collector, in this process, of a copy of two fixture homes whose first log holds
    half its frames (the rest kept to append)."""
    home = tmp_path / name
    shutil.copytree(FIXTURE_HOMES / "subagent-parent", home)
    shutil.copytree(
        FIXTURE_HOMES / "auto-compact" / "sessions", home / "sessions", dirs_exist_ok=True
    )
    log = session_logs(home)[0].path
    frames = frames_of(log)
    log.write_bytes(b"".join(frames[: len(frames) // 2]))
    lease = lease_take(name=name, path=str(home), heartbeat_every=60.0)
    writer = SessionWriter(lease, sealing_key())
    hub = Hub(home, "sdk", name=name)
    hub.subscribe(writer)
    hub.cold_start()
    writer.flush()
    return Collected(hub, writer, lease, {log: b"".join(frames[len(frames) // 2 :])})


@pytest.fixture
def user_client(client: Client, django_user_model: Any) -> Client:
    user = django_user_model.objects.create_user("viewer", password="x", is_staff=True)
    client.force_login(user)
    return client


def _shown(name: str = "h") -> HomeView:
    shown = worker.worker_homes().home(name)
    assert shown is not None
    return shown.view


def test_the_worker_follows_the_rows_at_the_cost_of_what_changed(tmp_path: Path, off: None) -> None:
    collected = _collect(tmp_path)
    homes = worker.worker_homes()
    shown = homes.home("h")
    assert shown is not None and shown.online and shown.collected and homes.names == ("h",)
    assert _sessions(shown.view) == _sessions(collected.hub.view())
    assert shown.view.tree == collected.hub.view().tree
    assert shown_homes() is homes  # pages read the same homes
    follower = worker.worker_follower("h")
    assert follower is not None and follower.reads == len(shown.view.sessions)

    assert worker.worker_homes() is homes  # nothing changed: nothing read
    assert follower.reads == len(shown.view.sessions)

    for path, rest in collected.rest.items():
        with path.open("ab") as handle:
            handle.write(rest)
    collected.write()
    after = _shown()
    assert follower.reads == len(shown.view.sessions) + 1  # the one session that grew
    assert _sessions(after) == _sessions(collected.hub.view()) != _sessions(shown.view)

    gone = min(collected.hub.index.folders)
    shutil.rmtree(gone)
    collected.write()
    assert _sessions(_shown()) == _sessions(collected.hub.view())
    assert service._hub is None  # never a hub in a web worker


def test_a_session_announcement_reads_that_session_alone(tmp_path: Path, off: None) -> None:
    """A session socket told of a change reads its session's row, not every row the
    collector wrote; the home's next refresh counts it changed (its list row moves)."""
    collected = _collect(tmp_path)
    before = _shown()
    assert before.tree == collected.hub.view().tree  # laid out: the next view's basis
    follower = worker.worker_follower("h")
    assert follower is not None
    for path, rest in collected.rest.items():
        with path.open("ab") as handle:
            handle.write(rest)
    collected.hub.sync()
    view = collected.hub.view()
    (sid,) = [s for s, v in view.sessions.items() if v.snapshot != before.sessions[s].snapshot]
    # The same write holds every other row too (as when several sessions grow together).
    collected.writer(HomeChange(view, frozenset(view.sessions), frozenset()))
    assert collected.writer.flush() == len(view.sessions) == 3
    version = CollectorLease.objects.get(name="h").version
    reads = follower.reads
    shown = shown_session("h", sid, version)
    assert follower.reads == reads + 1
    assert shown is not None and shown.snapshot == view.sessions[sid].snapshot
    assert shown.snapshot != before.sessions[sid].snapshot
    assert shown_session("h", sid, version) is shown  # held: nothing read
    assert follower.reads == reads + 1
    after = _shown()  # the refresh reads every row written, the one read above again
    assert follower.reads == reads + 1 + 3
    assert after.basis is not None and after.basis.view is before
    assert after.basis.touched == set(view.sessions)
    assert after.tree == collected.hub.view().tree  # the grown session moved up
    assert shown_session("h", "no-such-session", version) is None


def test_a_push_the_worker_has_read_already_costs_no_query(
    tmp_path: Path, off: None, django_assert_num_queries: Any
) -> None:
    collected = _collect(tmp_path)
    homes = worker.worker_homes()
    version = CollectorLease.objects.get(name="h").version
    with django_assert_num_queries(0):  # another socket's push read this version first
        assert worker.worker_homes({"h": version}) is homes
    for path, rest in collected.rest.items():
        with path.open("ab") as handle:
            handle.write(rest)
    collected.write()
    newer = CollectorLease.objects.get(name="h").version
    assert newer > version
    after = worker.worker_homes({"h": newer})  # not read yet: read now
    assert after is not homes and _shown().version == newer
    assert worker.worker_homes({"h": newer}) is after


def test_pages_show_the_home_and_say_when_its_collector_is_offline(
    tmp_path: Path, off: None, user_client: Client
) -> None:
    collected = _collect(tmp_path)
    page = user_client.get("/").content.decode()
    assert 'data-home="h"' in page and "offline" not in page
    for session_id in collected.hub.view().sessions:
        assert session_id in page
        assert user_client.get(f"/homes/h/sessions/{session_id}/").status_code == 200
    lease_release(collected.lease)
    page = user_client.get("/").content.decode()
    assert 'id="collector-offline-h"' in page and "collector of h offline since" in page
    assert all(session_id in page for session_id in collected.hub.view().sessions)
    assert service._hub is None


def _may_compact(django_user_model: Any) -> None:
    user = django_user_model.objects.get(username="viewer")
    user.user_permissions.add(Permission.objects.get(codename="compact"))


def _members(*groups: str) -> list[str]:
    """A channel of this process's layer in each of ``groups``."""
    layer = get_channel_layer()
    assert layer is not None
    channels = []
    for group in groups:
        channel = async_to_sync(layer.new_channel)()
        async_to_sync(layer.group_add)(group, channel)
        channels.append(channel)
    return channels


def _received(channel: str, timeout: float = 0.5) -> dict[str, Any] | None:
    """The next message on ``channel``, or None when none comes within ``timeout``."""
    layer = get_channel_layer()
    assert layer is not None

    async def receive() -> dict[str, Any] | None:
        try:
            return dict(await asyncio.wait_for(layer.receive(channel), timeout))
        except TimeoutError:
            return None

    return async_to_sync(receive)()


def _carried_by(collected: Collected) -> Any:
    """``ask_collector`` as if the question reached the collector: its handler runs (in a
    process that collects the home) and its answer comes back."""

    def ask(name: str, message: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        assert name == "h" and timeout > 0
        answers: list[dict[str, Any]] = []
        place = CollectorPlace("h", collected.hub.home, "collector/x")
        with (
            override_settings(DSHWEB={**settings.DSHWEB, "COLLECT": True}),
            mock.patch.object(service, "_collected", ("h", collected.hub)),
            mock.patch.object(remote_settings, "answer", lambda m, r: answers.append(r)),
        ):
            # What crosses the channel layer is JSON-like: no object of the worker.
            remote_settings.run_settings_request(json.loads(json.dumps(message)), place)
        (reply,) = answers
        return reply

    return ask


def test_a_collected_homes_settings_are_read_and_saved_by_its_collector(
    tmp_path: Path, off: None, user_client: Client
) -> None:
    collected = _collect(tmp_path)
    patch = collected.hub.home / "profiles" / "sdk" / "cordis.patch.yml"
    before = patch.read_text()
    index = user_client.get("/settings/").content.decode()
    assert 'href="/homes/h/settings/"' in index  # the worker lists the homes
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.get(username="viewer"))
    with mock.patch.object(remote_settings, "ask_collector", _carried_by(collected)):
        page = client.get("/homes/h/settings/").content.decode()
        assert 'id="settings-home" data-home="h"' in page and 'data-profile="sdk"' in page
        assert 'href="/homes/h/settings/sdk/context-truth/"' in page
        url = "/homes/h/settings/sdk/context-truth/"
        form = client.get(url).content.decode()
        fields = form_fields(form, "settings-form")
        assert fields["csrfmiddlewaretoken"] and re.fullmatch(r"[0-9a-f]{64}", fields["sha256"])
        assert 'id="settings-form"' in form and "/settings/sdk" not in form.replace(
            "/homes/h/settings/sdk", ""
        )
        assert 'hx-post="/homes/h/settings/sdk/preview/"' in form  # the preview goes there too
        data = fields | {"language": "zh", "quantumPercent": "10"}
        saved = client.post(url, data)
        assert saved.status_code == 302, re.sub(
            r"\s+", " ", re.sub(r"<[^>]+>", " ", saved.content.decode())
        )[-3000:]
        assert saved["Location"] == url
        shown = client.get(url).content.decode()
        assert "Saved context-truth in profiles/sdk/cordis.patch.yml." in shown
        history = client.get("/homes/h/settings/sdk/history/").content.decode()
    config = row_config(read_patch(patch), "context-truth")
    assert config is not None and (config["language"], config["quantumPercent"]) == ("zh", 10)
    (revision,) = PatchRevision.objects.all()
    assert (revision.home, revision.user) == ("h", User.objects.get(username="viewer"))
    assert (revision.before, revision.after) == (before, patch.read_text())
    assert f'action="/homes/h/settings/revisions/{revision.pk}/restore/"' in history
    # Without the worker's CSRF token the collector is never asked.
    with mock.patch.object(remote_settings, "ask_collector") as never:
        assert client.post(url, {**data, "csrfmiddlewaretoken": "x"}).status_code == 403
        never.assert_not_called()


def test_a_collected_homes_collector_answers_data_and_says_what_it_cannot(
    tmp_path: Path, off: None, user_client: Client
) -> None:
    collected = _collect(tmp_path)
    ask = _carried_by(collected)
    row = ask(
        "h", {"verb": "row", "arguments": {"profile": "sdk", "section": "context-truth"}}, timeout=5
    )
    # Data, not a page: the form's values, the file's version, the sessions to preview.
    assert "<" not in json.dumps(row["data"]["initial"])
    assert row["data"]["path"] == "profiles/sdk/cordis.patch.yml"
    assert {s["session_id"] for s in row["data"]["sessions"]} == set(collected.hub.view().sessions)
    assert ask(
        "h", {"verb": "row", "arguments": {"profile": "nope", "section": "x"}}, timeout=5
    ) == {
        "not_found": "no profile 'nope' in " + str(collected.hub.home),
    }
    assert "failed" in ask("h", {"verb": "format_disk", "arguments": {}}, timeout=5)
    assert "failed" in ask("h", {"verb": "row", "arguments": {"rm": "-rf"}}, timeout=5)
    with mock.patch.object(remote_settings, "ask_collector", ask):
        assert user_client.get("/homes/h/settings/nope/history/").status_code == 404
        assert user_client.get("/homes/h/settings/sdk/no-such-row/").status_code == 404


def test_a_collected_homes_settings_say_why_they_cannot_be_reached(
    tmp_path: Path, off: None, user_client: Client, django_user_model: Any
) -> None:
    collected = _collect(tmp_path)
    engine = user_client.get("/homes/h/settings/engine/")
    assert engine.status_code == 409 and b"DSHWEB_ENGINE_URL" in engine.content
    with mock.patch.object(
        remote_settings, "ask_collector", side_effect=CollectorSilent("no answer in 60 s")
    ):
        silent = user_client.get("/homes/h/settings/")
    assert silent.status_code == 504 and b"no answer in 60 s" in silent.content
    lease_release(collected.lease)
    offline = user_client.get("/homes/h/settings/")
    assert offline.status_code == 503 and b"the collector of h is not running" in offline.content
    assert user_client.get("/homes/nowhere/settings/").status_code == 404
    viewer = django_user_model.objects.create_user("plain", password="x")
    plain = Client()
    plain.force_login(viewer)
    assert plain.get("/homes/h/settings/").status_code == 403


def test_a_collected_homes_answer_of_another_shape_is_a_page_saying_so(
    tmp_path: Path, off: None, user_client: Client
) -> None:
    """A collector of another version (or anything else on its channel) answering what the
    settings protocol does not say: the page says what it could not read, and where."""
    _collect(tmp_path)
    answers = {
        "/homes/h/settings/": ({"data": ["sdk"]}, "Expected `object`, got `array` - at `$.data`"),
        "/homes/h/settings/sdk/context-truth/": (
            {"data": {"kind": "row", "profile": "sdk"}},
            "Object missing required field `section` - at `$.data`",
        ),
        "/homes/h/settings/sdk/history/": (
            {"data": "sdk"},
            "Expected `array`, got `str` - at `$.data`",
        ),
    }
    for url, (reply, said) in answers.items():
        with mock.patch.object(remote_settings, "ask_collector", return_value=reply):
            page = user_client.get(url)
        text = page.content.decode()
        assert page.status_code == 502, url
        assert 'id="settings-unanswered"' in text and said in text, text[-2000:]
        assert "answered in a form this dshweb cannot read" in text


def test_a_press_with_no_collector_running_fails_at_once_with_the_reason(
    tmp_path: Path, off: None, user_client: Client, django_user_model: Any
) -> None:
    collected = _collect(tmp_path)
    session_id = next(iter(collected.hub.view().sessions))
    _may_compact(django_user_model)
    lease_release(collected.lease)
    (to_collector,) = _members(collector_group("h"))
    pressed = user_client.post(f"/homes/h/sessions/{session_id}/compact/", HTTP_HX_REQUEST="true")
    assert pressed.status_code == 204
    request = CompactionRequest.objects.get()
    assert (request.state, request.outcome) == ("failed", "collector_offline")
    assert request.message.startswith("the collector of h is not running (last seen ")
    assert request.user is not None and request.user.username == "viewer"
    assert _received(to_collector) is None  # nothing sent
    page = user_client.get(f"/homes/h/sessions/{session_id}/").content.decode()
    assert "Not sent — the collector of h is not running (last seen" in page

    # A live collector in another process, and a channel layer in this one's memory.
    CompactionRequest.objects.all().delete()
    held = lease_take(name="h", path=collected.lease.path, heartbeat_every=60.0)
    CollectorLease.objects.filter(name="h").update(pid=os.getpid() + 1)
    user_client.post(f"/homes/h/sessions/{session_id}/compact/", HTTP_HX_REQUEST="true")
    request = CompactionRequest.objects.get()
    assert (request.state, request.outcome) == ("failed", "collector_unreachable")
    assert "set DSHWEB_REDIS_URL on both" in request.message
    assert _received(to_collector) is None
    lease_release(held)

    CompactionRequest.objects.all().delete()
    # No such home collected: no session to press either.
    assert user_client.post(f"/homes/never/sessions/{session_id}/compact/").status_code == 404
    assert not CompactionRequest.objects.exists()


def test_a_press_on_a_worker_is_run_by_the_collector_of_the_home(
    tmp_path: Path, off: None, user_client: Client, django_user_model: Any
) -> None:
    collected = _collect(tmp_path)
    session_id = next(iter(collected.hub.view().sessions))
    _may_compact(django_user_model)
    to_collector, on_page = _members(collector_group("h"), session_group("h", session_id))
    pressed = user_client.post(f"/homes/h/sessions/{session_id}/compact/", HTTP_HX_REQUEST="true")
    assert pressed.status_code == 204
    request = CompactionRequest.objects.get()
    owner = collector_owner("h", collected.lease.token)
    assert (request.state, request.owner) == ("requested", owner)
    assert collected.lease.token not in request.owner
    sealed = _received(to_collector)
    assert sealed is not None and sealed["type"] == "compact.run"
    command = open_sealed(sealed)  # what the collector acts on, once it is opened
    assert command == {"type": "compact.run", "request": request.pk}
    changed = {"type": "compact.changed", "home": "h", "session_id": session_id}
    requested = {
        "state": "requested",
        "outcome": "",
        "message": "",
        "seq_at_request": request.seq_at_request,
    }
    assert _received(on_page) == changed | {"request": requested}  # the state it announces
    time.sleep(0.3)
    request.refresh_from_db()
    assert request.state == "requested"  # the worker runs nothing itself

    # A second press while it is in flight sends nothing.
    user_client.post(f"/homes/h/sessions/{session_id}/compact/", HTTP_HX_REQUEST="true")
    assert CompactionRequest.objects.count() == 1 and _received(to_collector) is None

    # A command addressed to another collector (an earlier lease) is dropped.
    home = Path(collected.lease.path)
    compact.run_commanded_compaction(command, CollectorPlace("h", home, "collector/earlier"))
    request.refresh_from_db()
    assert request.state == "requested"

    # The collector runs it with its own dsh web: one that never answers.
    listener = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    engine_url = f"http://127.0.0.1:{listener.getsockname()[1]}/?token=secret-launch-token"
    try:
        with (
            override_settings(DSHWEB={**settings.DSHWEB, "ENGINE_URL": engine_url}),
            mock.patch("dshweb.dsh_web.client.LOGIN_TIMEOUT", 2.0),
        ):
            started = time.monotonic()
            compact.run_commanded_compaction(command, CollectorPlace("h", home, owner))
    finally:
        listener.close()
    assert time.monotonic() - started < 10
    request.refresh_from_db()
    assert (request.state, request.outcome) == ("failed", "unreachable")
    assert "does not answer (hung?)" in request.message
    assert "secret-launch-token" not in request.message + request.dsh_web_answer
    announced = _received(on_page)
    assert announced is not None and announced["request"]["outcome"] == "unreachable"
    assert announced["request"]["message"] == request.message
    page = user_client.get(f"/homes/h/sessions/{session_id}/").content.decode()
    assert "The DSH engine is unreachable" in page


def test_a_request_whose_message_was_lost_is_picked_up_and_run_once(
    tmp_path: Path, off: None, user_client: Client, django_user_model: Any
) -> None:
    collected = _collect(tmp_path)
    session_id = next(iter(collected.hub.view().sessions))
    _may_compact(django_user_model)
    user_client.post(f"/homes/h/sessions/{session_id}/compact/", HTTP_HX_REQUEST="true")
    request = CompactionRequest.objects.get()  # its message reached no collector
    owner = collector_owner("h", collected.lease.token)
    place = CollectorPlace("h", Path(collected.lease.path), owner)
    (found,) = commands.waiting_commands(place)
    assert found == {"type": "compact.run", "request": request.pk}
    assert commands.waiting_commands(CollectorPlace("h", place.home, "collector/other")) == []

    listener = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    engine_url = f"http://127.0.0.1:{listener.getsockname()[1]}/?token=t"
    try:
        with (
            override_settings(DSHWEB={**settings.DSHWEB, "ENGINE_URL": engine_url}),
            mock.patch("dshweb.dsh_web.client.LOGIN_TIMEOUT", 2.0),
        ):
            first = threading.Thread(target=compact.run_commanded_compaction, args=(found, place))
            first.start()
            deadline = time.monotonic() + 5
            while CompactionRequest.objects.get().state == "requested":
                assert time.monotonic() < deadline
                time.sleep(0.02)
            assert CompactionRequest.objects.get().state == "running"  # claimed
            assert commands.waiting_commands(place) == []  # no longer waiting
            started = time.monotonic()
            compact.run_commanded_compaction(found, place)  # found twice: runs once
            assert time.monotonic() - started < 1
            first.join(15)
    finally:
        listener.close()
    request.refresh_from_db()
    assert (request.state, request.outcome) == ("failed", "unreachable")


def test_a_request_whose_collector_stopped_is_closed_as_abandoned(
    tmp_path: Path, off: None, user_client: Client, django_user_model: Any
) -> None:
    collected = _collect(tmp_path)
    session_id = next(iter(collected.hub.view().sessions))
    _may_compact(django_user_model)
    user_client.post(f"/homes/h/sessions/{session_id}/compact/", HTTP_HX_REQUEST="true")
    assert compact.close_abandoned_requests() == 0  # its collector is running
    lease_release(collected.lease)
    assert compact.close_abandoned_requests() == 1
    request = CompactionRequest.objects.get()
    assert (request.state, request.outcome) == ("failed", "abandoned")


def test_a_worker_shows_every_collected_home_each_session_by_its_home(
    tmp_path: Path, off: None, user_client: Client
) -> None:
    page = user_client.get("/")
    assert page.status_code == 503 and b"no collector has written" in page.content
    # Two homes with the same sessions (copies of the same fixtures): one id, two sessions.
    a, b = _collect(tmp_path, "alpha"), _collect(tmp_path, "beta")
    lease_release(b.lease)
    ids = sorted(a.hub.view().sessions)
    assert ids == sorted(b.hub.view().sessions)
    html = user_client.get("/").content.decode()
    assert 'id="home-names"' in html and 'data-home="alpha"' in html and 'data-home="beta"' in html
    assert 'id="collector-offline-beta"' in html and 'id="collector-offline-alpha"' not in html
    for session_id in ids:
        for name in ("alpha", "beta"):
            assert f'href="/homes/{name}/sessions/{session_id}/"' in html
            shown = user_client.get(f"/homes/{name}/sessions/{session_id}/").content.decode()
            assert f'id="session-home" data-home="{name}"' in shown
            assert f'ws-connect="/ws/homes/{name}/sessions/{session_id}/"' in shown
    assert html.count('class="home-name"') == 2 * len(ids)  # each row names its home
    for name in ("alpha", "beta"):
        assert f'<option value="{name}">{name} ({len(ids)})</option>' in html

    only_b = user_client.get("/?home=beta").content.decode()
    assert only_b.count('class="home-name" data-home="beta"') == len(ids)
    assert 'class="home-name" data-home="alpha"' not in only_b
    assert '<option value="beta" selected>' in only_b
    assert 'class="home-name" data-home="alpha"' not in user_client.get("/?q=beta").content.decode()

    # An address without the home: the session is in both, so the page names them.
    both = user_client.get(f"/sessions/{ids[0]}/")
    assert (
        both.status_code == 404
        and f'href="/homes/alpha/sessions/{ids[0]}/"' in both.content.decode()
    )
    shutil.rmtree(min(a.hub.index.folders))
    a.write()
    (left,) = set(ids) - set(a.hub.view().sessions)
    moved = user_client.get(f"/sessions/{left}/")
    assert (moved.status_code, moved["Location"]) == (302, f"/homes/beta/sessions/{left}/")


@pytest.mark.parametrize(("value", "on"), [("", True), ("on", True), ("off", False)])
def test_dshweb_collect_is_read(monkeypatch: pytest.MonkeyPatch, value: str, on: bool) -> None:
    monkeypatch.setenv("DSHWEB_COLLECT", value)
    assert collect() is on


@pytest.mark.parametrize("value", ["0", "no", "OFF", "false"])
def test_a_dshweb_collect_that_is_neither_on_nor_off_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("DSHWEB_COLLECT", value)
    with pytest.raises(ConfigurationError, match=r"DSHWEB_COLLECT: .* neither on .* nor off"):
        collect()
