"""Every page, asked for in Chinese (``Accept-Language: zh-CN``), reads in Chinese: no
English word is left in what a person reads — the page's text and its ``title``,
``aria-label``, ``placeholder`` and ``alt`` attributes — except the session's own data,
which the templates mark ``translate="no"`` (titles, folders, models, the line the model
was told, errors), what ``<code>`` holds, and names that are the same in every language.
The same pages in English do have English words: the check reads them."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from dshweb.alerts.models import AlertRule
from tests.conftest import FIXTURE_HOMES

pytestmark = pytest.mark.django_db

SESSIONS = ("plain-turns", "manual-compact", "auto-compact", "cjk-emoji")

READ_ATTRIBUTES = {"title", "aria-label", "placeholder", "alt"}
NOT_READ = {"script", "style", "code", "pre", "kbd", "template"}
SAME_IN_EVERY_LANGUAGE = {
    "dshweb", "DSH", "API", "JSON", "CSV", "UTC", "URL", "ID", "HMAC", "SHA256",
    "Webhook", "Token", "Tokens", "tokens", "token", "Slack", "Django", "dsh-context-truth",
    "context-truth", "K", "M", "OpenAPI", "ISO",
}  # fmt: skip
"""Product names, formats and units; ``token`` as ``dsh-context-truth``'s own Chinese line
writes it."""
WORD = re.compile(r"[A-Za-z][A-Za-z-]*[A-Za-z]|[A-Za-z]")
NAMES = re.compile(
    r"\S+://\S+"  # an address: http://127.0.0.1:<port>/?token=…
    r"|(?<![\w/])/[\w./-]+"  # a path: /home/me/app
    r"|\bdsh( --profile)? web\b"  # the command `dsh web`
    r"|\bX-Dshweb-Signature\b|\bPOST\b"  # a header and the method a webhook uses
    r"|\b[KNX]\b"  # the letters of a formula: within N steps, below X
    r"|\?\w+=|'[^']*'"  # a query parameter, and a value the person typed: ?before= 'abc'
    r"|\b[a-z]+[A-Z]\w*"  # a config key, as the plugin spells it: thresholdRatio
)
"""Names and formulas a sentence quotes, the same in every language."""

PAGES = {
    "/": 200,
    "/?state=live": 200,
    "/homes/local/sessions/auto-compact/": 200,
    "/homes/local/sessions/manual-compact/": 200,
    "/homes/local/sessions/plain-turns/": 200,
    "/homes/local/sessions/auto-compact/ledger.html": 200,
    "/homes/local/sessions/no-such-session/": 404,
    "/cost/": 200,
    "/alerts/": 200,
    "/alerts/new/": 200,
    "/tokens/": 200,
    "/settings/": 200,
    "/settings/engine/": 200,
    "/settings/sdk/context-truth/": 200,
    "/settings/sdk/compaction-basic/": 200,
    "/settings/sdk/tool-result-pruner/": 200,
    "/api/v1/docs": 200,
    "/no/such/page/": 404,
}


class ReadText(HTMLParser):
    """What a person reads in a page, outside elements marked ``translate="no"``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._open: list[bool] = []  # per open element: whether it is not read

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        skipped = (
            bool(self._open and self._open[-1])
            or tag in NOT_READ
            or values.get("translate") == "no"
            or "hidden" in values
        )
        if tag not in ("br", "input", "img", "meta", "link", "hr", "source", "wbr"):
            self._open.append(skipped)
        if not skipped:
            self.texts.extend(v for k, v in attrs if k in READ_ATTRIBUTES and v)
            if (
                tag == "input"
                and values.get("type") in ("submit", "button")
                and values.get("value")
            ):
                self.texts.append(str(values["value"]))

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag not in ("br", "input", "img", "meta", "link", "hr"):
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if not (self._open and self._open[-1]):
            self.texts.append(data)


def english_words(html: str) -> list[str]:
    reader = ReadText()
    reader.feed(html)
    return [
        word
        for text in reader.texts
        for word in WORD.findall(NAMES.sub(" ", text))
        if word not in SAME_IN_EVERY_LANGUAGE
    ]


@pytest.fixture
def staff_client(client: Client, django_user_model: Any, tmp_path: Path, settings: Any) -> Client:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "plain-turns" / "profiles", home / "profiles")
    for name in SESSIONS:
        shutil.copytree(FIXTURE_HOMES / name / "sessions", home / "sessions", dirs_exist_ok=True)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home, "DEMO": False, "PROFILE": "sdk"}
    user = django_user_model.objects.create_user("viewer", password="x", is_staff=True)
    AlertRule.objects.create(owner=user, name="告警", condition="band", band="tight")
    client.force_login(user)
    return client


@pytest.mark.parametrize("path", PAGES)
def test_a_page_asked_for_in_chinese_has_no_english_words(staff_client: Client, path: str) -> None:
    page = staff_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    assert page.status_code == PAGES[path], path
    html = page.content.decode()
    assert '<html lang="zh-hans">' in html
    found = english_words(html)
    assert not found, f"{path} in Chinese has English words: {found}"
    english = staff_client.get(path, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert len(english_words(english)) > 5  # the same page in English: the check reads it


def test_the_sign_in_page_in_chinese(client: Client) -> None:
    html = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert english_words(html) == []


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/settings/", 403),  # staff only
        ("/homes/local/sessions/auto-compact/ledger.html?before=abc", 400),
    ],
)
def test_a_refusal_in_chinese(
    staff_client: Client, django_user_model: Any, path: str, status: int
) -> None:
    user = django_user_model.objects.create_user("not-staff", password="x")
    staff_client.force_login(user)
    page = staff_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert page.status_code == status
    found = english_words(page.content.decode())
    assert not found, f"{path} in Chinese has English words: {found}"


def test_the_check_skips_session_data_and_finds_the_rest() -> None:
    html = (
        '<p title="Hover">会话 <span translate="no">My <b>title</b></span> <code>ls -la</code>'
        " 12K tokens DSH /home/me/app http://127.0.0.1:8000/?token=… 在 N 步之内</p>"
        "<p hidden>Later</p><script>var x = 'y';</script><p>Left over: see me</p>"
    )
    assert english_words(html) == ["Hover", "Left", "over", "see", "me"]
