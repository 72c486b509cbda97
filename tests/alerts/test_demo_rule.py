"""The demo's alert rule (dshweb/alerts/demo.py): given to each administrator who has none
when a process starts on a demo home, once per demo home, never on a real one; and it
fires, through the real watcher and hub, as the replayed recording gets tight, with a
notice on the administrator's page."""

from __future__ import annotations

import asyncio
import html
import shutil
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.alerts.demo import MARK, give_demo_rules
from dshweb.alerts.models import AlertFiring, AlertRule
from dshweb.core.fold.gauge import Band, context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.demo.home import REPLAY_SESSION_ID, REPLAY_SOURCE
from dshweb.demo.replay import Recording, ReplayWriter, load_recording, replay_dir
from dshweb.live import jobs, startup
from dshweb.live.service import own_home
from tests.alerts.test_alerts_end_to_end import (
    alert_notices,
    first_look,
    make_rule,
    socket_of,
    stop,
    until,
)
from tests.conftest import FIXTURE_HOMES
from tests.support.homes import show_the_demo

pytestmark = [pytest.mark.django_db(transaction=True)]
__all__ = ["stop"]  # a fixture of the end-to-end tests, used here

NAME = "Demo: a session's context gets tight"


@pytest.fixture
def demo(tmp_path: Path, settings: Any) -> Path:
    """This process shows the demo home (a copy in its data folder): no DSH home."""
    return show_the_demo(tmp_path, settings, HOME_NAME="local")


def test_each_admin_without_a_rule_gets_one_once(demo: Path) -> None:
    users = get_user_model().objects
    admin = users.create_superuser("admin", password="pw-for-tests-only")
    other = users.create_superuser("other-admin", password="pw-for-tests-only")
    make_rule(other, name="mine")
    viewer = users.create_user("viewer", password="pw-for-tests-only")
    made = give_demo_rules()
    assert [(r.owner, r.name, r.condition, r.band, r.scope, r.notify_browser) for r in made] == [
        (admin, NAME, "band", "tight", "all", True)
    ]
    assert made[0].webhook_url == "" and made[0].email_to == ""
    assert sorted(AlertRule.objects.values_list("owner__username", "name")) == [
        ("admin", NAME),
        ("other-admin", "mine"),
    ]
    assert not AlertRule.objects.filter(owner=viewer).exists()
    assert (demo / MARK).is_file()
    AlertRule.objects.filter(owner=admin).delete()
    assert give_demo_rules() == []  # once per demo home: a rule deleted stays deleted
    assert jobs.jobs_at_start()["dshweb.alerts.demo.give_demo_rules"] is give_demo_rules


def test_a_real_home_gets_no_rule(tmp_path: Path, settings: Any) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home, "DEMO": True, "DATA_DIR": tmp_path}
    assert not own_home().is_demo
    get_user_model().objects.create_superuser("admin", password="pw-for-tests-only")
    assert give_demo_rules() == []
    assert not AlertRule.objects.exists()
    assert not (home / MARK).exists() and not (tmp_path / "demo-home").exists()


def _frames_until_tight(recording: Recording, scratch: Path) -> int:
    """How many frames of the recording make its session tight, as the hub folds it."""
    writer = ReplayWriter(recording, replay_dir(scratch, recording), move_times=False)
    writer.begin()
    index = HomeIndex(scratch)
    while not writer.done:
        writer.step()
        index.refresh()
        (shot,) = index.snapshots()
        if context_gauge(shot).band is Band.TIGHT:
            return writer.written
    raise AssertionError("the recording never gets tight")


@pytest.mark.asyncio
async def test_the_demo_rule_fires_as_the_replay_gets_tight(
    demo: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    stop: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(startup, "start_demo_replay", lambda home: None)  # the test plays it

    def admin_cookie() -> bytes:
        admin = get_user_model().objects.create_superuser("admin", password="pw-for-tests-only")
        client = Client()
        client.force_login(admin)
        return b"sessionid=" + str(client.cookies["sessionid"].value).encode()

    cookie = await database_sync_to_async(admin_cookie)()
    (rule,) = await database_sync_to_async(give_demo_rules)()
    recording = load_recording(REPLAY_SOURCE.read_bytes(), session_id=REPLAY_SESSION_ID)
    tight_at = _frames_until_tight(recording, tmp_path / "scratch")
    communicator = await socket_of(cookie)  # the server's services: the hub, the watcher
    await first_look(caplog, rules=1)
    writer = ReplayWriter(recording, replay_dir(demo, recording))
    writer.begin()
    while writer.written < tight_at:
        await asyncio.sleep(0.02)
        writer.step()
    firing = await until(
        lambda: AlertFiring.objects.filter(rule=rule, session_id=REPLAY_SESSION_ID).first()
    )
    assert firing.title == "The nightly import got slow"
    assert firing.summary.startswith("context tight: ")
    (notice,) = map(html.unescape, await alert_notices(communicator, 1))
    assert NAME in notice and "The nightly import got slow" in notice
    await communicator.disconnect()
