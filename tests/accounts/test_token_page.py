"""A new API token is shown once, in the answer to the POST that made it, which no cache
may keep; it never waits in the session (in the database's session row) for a later page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client

from dshweb.accounts.models import ApiToken
from dshweb.accounts.tokens import digest

pytestmark = [pytest.mark.django_db]

SHOWN = re.compile(r'id="new-token-value">([^<]+)<')


@pytest.fixture
def client() -> Client:
    user = get_user_model().objects.create_user("reader", password="pw-for-tests-only")
    client = Client()
    client.force_login(user)
    return client


def _session_data(client: Client) -> tuple[str, dict[str, object]]:
    """The session's row as stored (its encoded text) and as decoded."""
    row = Session.objects.get(session_key=client.cookies["sessionid"].value)
    return row.session_data, row.get_decoded()


def test_the_new_token_is_in_the_posts_answer_alone(client: Client) -> None:
    made = client.post("/tokens/", {"name": "notebook"})
    assert made.status_code == 200
    (token,) = SHOWN.findall(made.content.decode())
    assert token.startswith("dshweb_") and ApiToken.objects.get().digest == digest(token)
    cache_control = {part.strip() for part in made["Cache-Control"].split(",")}
    assert {"no-store", "no-cache", "private", "must-revalidate", "max-age=0"} <= cache_control
    assert made["Pragma"] == "no-cache"
    stored, decoded = _session_data(client)
    assert token not in stored and token not in repr(decoded)
    assert not [value for value in decoded.values() if str(value).startswith("dshweb_")]
    # The form under it is blank (no second token by accident), and the next page has none.
    (name_field,) = re.findall(r'<input [^>]*id="id_name"[^>]*>', made.content.decode())
    assert "value=" not in name_field
    again = client.get("/tokens/")
    assert again.status_code == 200 and not SHOWN.findall(again.content.decode())
    assert "notebook" in again.content.decode() and token[:13] in again.content.decode()


def test_a_form_with_errors_makes_no_token(client: Client) -> None:
    answer = client.post("/tokens/", {"name": ""})
    assert answer.status_code == 200 and not SHOWN.findall(answer.content.decode())
    assert 'class="field-error"' in answer.content.decode()
    assert not ApiToken.objects.exists()


def test_a_token_an_earlier_version_parked_in_the_session_is_dropped_unshown(
    client: Client,
) -> None:
    session = client.session
    session["dshweb-api-token"] = "dshweb_parked-by-an-earlier-version"
    session.save()
    page = client.get("/tokens/").content.decode()
    assert "parked-by-an-earlier-version" not in page
    assert "dshweb-api-token" not in _session_data(client)[1]
