"""The Compact card on the demo home: with nothing set, Compact asks a ``dsh web`` dshweb
runs itself (when the DSH runtime is installed) and the card says who writes the summary;
without the runtime, one line says how to get it; the replayed session has none, and a
press of it is refused. (The real engine compacting a demo session, in Chromium:
tests/browser/test_demo.py.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from dshweb.compaction import which_dsh_web
from dshweb.compaction.models import CompactionRequest, DshWebSetting
from dshweb.demo.home import REPLAY_SESSION_ID, REPLAY_SOURCE
from dshweb.demo.replay import ReplayWriter, load_recording, replay_dir
from dshweb.installed import add_extra
from tests.support.homes import show_the_demo
from tests.support.snapshots import squeezed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(tmp_path: Path, settings: Any) -> Path:
    return show_the_demo(tmp_path, settings, ENGINE_URL="", ENGINE="")


@pytest.fixture
def client() -> Client:
    user = User.objects.create_user("presser", password="x-x-x-x-1")
    user.user_permissions.add(Permission.objects.get(codename="compact"))
    signed_in = Client()
    signed_in.force_login(user)
    return signed_in


def _card(client: Client, session_id: str) -> tuple[str, str]:
    page = client.get(f"/homes/local/sessions/{session_id}/").content.decode()
    button = re.search(r'<button [^>]*id="compact-button"[^>]*>', page)
    assert button is not None
    card = re.search(r'<section class="card compact-card".*?</section>', page, re.S)
    assert card is not None
    return button.group(0), squeezed(card.group(0))


def test_the_demo_compacts_with_nothing_set_and_says_who_summarises(
    demo: Path, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(which_dsh_web, "find_dsh", lambda: Path("/usr/bin/dsh"))
    button, card = _card(client, "csv-importer")
    assert 'type="submit"' in button and "aria-disabled" not in button
    assert "a stand-in model on this machine writes the summary" in card
    DshWebSetting.objects.create(mode="url", launch_url="http://127.0.0.1:9/?token=x")
    button, card = _card(client, "csv-importer")  # a dsh web set by hand: no demo note
    assert 'type="submit"' in button and "stand-in" not in card


def test_without_the_runtime_the_demo_says_how_to_get_it(
    demo: Path, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(which_dsh_web, "find_dsh", lambda: None)
    button, card = _card(client, "csv-importer")
    assert 'aria-disabled="true"' in button and 'type="button"' in button
    assert 'data-reason="no-runtime"' in card
    assert (
        "Compact on the demo needs the DSH runtime, which is not installed: "
        f"<code>{add_extra('engine')}</code>".replace("'", "&#x27;")
    ) in card
    assert "No DSH engine" not in card


def test_the_replayed_session_has_no_compact(demo: Path, client: Client) -> None:
    recording = load_recording(REPLAY_SOURCE.read_bytes(), session_id=REPLAY_SESSION_ID)
    ReplayWriter(recording, replay_dir(demo, recording)).begin()  # as the replay starts
    button, card = _card(client, "demo-live")
    assert 'aria-disabled="true"' in button
    assert 'data-reason="replayed"' in card
    refused = client.post("/homes/local/sessions/demo-live/compact/", HTTP_HX_REQUEST="true")
    assert refused.status_code == 409
    assert refused.content.decode() == (
        "The demo plays this recorded session back: it cannot be compacted."
    )
    assert not CompactionRequest.objects.exists()
