"""Refusals a person meets are pages of the site that say why, not Django's bare
"403 Forbidden" or "Bad Request (400)"."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

pytestmark = pytest.mark.django_db


def _signed_in(*, staff: bool = False, may_compact: bool = False) -> Client:
    user = User.objects.create_user("someone", password="x-x-x-x-1", is_staff=staff)
    if may_compact:
        user.user_permissions.add(Permission.objects.get(codename="compact"))
    client = Client()
    client.force_login(user)
    return client


def _page(page: str, section: str, *, signed_in: bool = True) -> str:
    """The text of the page's ``section`` notice, after checking it sits in the layout."""
    assert 'id="site-header"' in page
    assert ('Sign out <span translate="no">someone</span>' in page) is signed_in
    found = re.search(rf'<section [^>]*id="{section}"[^>]*>(.*?)</section>', page, re.DOTALL)
    assert found is not None, page[:500]
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1))).strip()
    return html.unescape(text)


@pytest.mark.parametrize(
    ("method", "url", "reason"),
    [
        ("post", "/homes/local/sessions/any/compact/", "Your account may not compact sessions."),
        ("get", "/settings/", "Only staff users may change DSH settings."),
        ("get", "/settings/engine/", "Only staff users may change DSH settings."),
    ],
)
def test_a_refusal_says_why(method: str, url: str, reason: str) -> None:
    response = getattr(_signed_in(), method)(url)
    assert response.status_code == 403
    text = _page(response.content.decode(), "forbidden")
    assert text.startswith(f"Not allowed {reason} ")


def test_a_refused_form_says_what_to_do() -> None:
    user = User.objects.create_user("someone", password="x-x-x-x-1")
    user.user_permissions.add(Permission.objects.get(codename="compact"))
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/homes/local/sessions/any/compact/")
    assert response.status_code == 403
    text = _page(response.content.decode(), "forbidden")
    assert text.startswith("Form refused dshweb refused this form")
    assert "Nothing was changed." in text


def test_a_bad_address_says_why() -> None:
    response = _signed_in().get("/homes/local/sessions/any/ledger.html?before=abc")
    assert response.status_code == 400
    text = _page(response.content.decode(), "bad-request")
    assert text == "Bad request ?before= takes a fold number (1, 2, …), not 'abc'. All sessions"


def test_a_request_django_refuses_is_a_page_of_the_site() -> None:
    response = _signed_in().get("/", headers={"host": "evil.example"})  # not an allowed host
    assert response.status_code == 400
    # Refused before the session is read: the page names nobody.
    text = _page(response.content.decode(), "bad-request", signed_in=False)
    assert text.startswith("Bad request dshweb could not read this request")
