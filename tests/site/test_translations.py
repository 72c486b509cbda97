"""Languages: English and Simplified Chinese, chosen by Accept-Language or the switch (then
remembered), with ``<html lang>`` following; and catalogs without a gap: every message of
each ``.po`` translated and none fuzzy, and each ``.mo`` the compiled ``.po``."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from babel.messages.extract import extract
from django.test import Client
from django.utils import translation
from django.utils.translation.template import templatize

from dshweb.words import BANDS, named
from tests.conftest import REPO
from tests.support.messages import catalogs, compiled, read

pytestmark = pytest.mark.django_db


def test_every_catalog_is_translated_and_compiled() -> None:
    assert [po.parent.parent.name for po in catalogs()] == ["zh_Hans"]
    for po in catalogs():
        catalog = read(po)
        messages = [m for m in catalog if m.id]
        assert messages, po
        untranslated = [m.id for m in messages if not all(_strings(m.string))]
        assert untranslated == [], f"{po}: untranslated"
        assert [m.id for m in messages if m.fuzzy] == [], f"{po}: fuzzy"
        assert po.with_suffix(".mo").read_bytes() == compiled(po), (
            f"{po.with_suffix('.mo')} is not the compiled .po: run scripts/messages compile"
        )


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def _lang(html: str) -> str:
    found = re.search(r'<html lang="([^"]+)"', html)
    assert found, html[:200]
    return found[1]


def test_accept_language_picks_the_language_and_html_lang_follows(client: Client) -> None:
    english = client.get("/accounts/login/").content.decode()
    assert _lang(english) == "en" and "<h1>Sign in</h1>" in english
    chinese = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert _lang(chinese) == "zh-hans"
    assert "<h1>登录</h1>" in chinese and "用户名" in chinese
    assert "Sign in" not in chinese and "Username" not in chinese


def test_the_switch_is_remembered_over_accept_language(client: Client) -> None:
    page = client.get("/accounts/login/").content.decode()
    assert 'id="language-switch"' in page and 'value="zh-hans"' in page
    switched = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/accounts/login/"})
    assert switched.status_code == 302 and switched["Location"] == "/accounts/login/"
    again = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert _lang(again) == "zh-hans" and "<h1>登录</h1>" in again


def test_the_switch_is_a_checked_post_that_goes_back_only_to_this_site() -> None:
    guarded = Client(enforce_csrf_checks=True)
    refused = guarded.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert refused.status_code == 403
    away = Client().post("/i18n/setlang/", {"language": "zh-hans", "next": "https://evil.example/"})
    assert away.status_code == 302 and away["Location"] == "/"


BAND_ORDER = ("ample", "moderate", "tight", "critical")
CHINESE_BANDS = ("充裕", "适中", "紧张", "临界")
"""The Chinese band names, least pressure first: each reads as more pressed than the one
before it (docs/development.md, "Translations")."""


def test_the_chinese_band_names_read_in_order_and_one_per_band() -> None:
    with translation.override("zh-hans"):
        assert tuple(named(BANDS, band) for band in BAND_ORDER) == CHINESE_BANDS
    # Every band a Chinese message quotes by name is quoted by that same name.
    (po,) = catalogs()
    quoted = {
        name
        for message in read(po)
        for text in _strings(message.string)
        for name in re.findall(r"「([^」%]+)」", text or "")
    }
    assert quoted and quoted <= set(CHINESE_BANDS), quoted - set(CHINESE_BANDS)


KEYWORDS = {
    "_": None,
    "gettext": None,
    "gettext_lazy": None,
    "gettext_noop": None,
    "ngettext": (1, 2),
    "ngettext_lazy": (1, 2),
    "pgettext": ((1, "c"), 2),
    "pgettext_lazy": ((1, "c"), 2),
    "npgettext": ((1, "c"), 2, 3),
    "npgettext_lazy": ((1, "c"), 2, 3),
}
"""Django's marking functions, as ``makemessages`` collects them (``_`` is gettext or
gettext_lazy, imported so)."""


def marked_messages() -> set[tuple[str | None, str]]:
    """Every (context, msgid) dshweb marks for translation: in its Python (by Babel's
    extractor) and its templates (as ``makemessages`` reads them: templatized first)."""
    found: set[tuple[str | None, str]] = set()
    root = REPO / "dshweb"
    for path in sorted(root.rglob("*.py")):
        with path.open("rb") as handle:
            found |= _extracted(handle)
    for path in sorted(root.rglob("templates/**/*.html")):
        code = templatize(path.read_text(encoding="utf-8"), origin=str(path))
        lines = "\n".join(line.lstrip() for line in code.splitlines())  # as xgettext: no blocks
        found |= _extracted(io.BytesIO(lines.encode("utf-8")))
    return found


def _extracted(handle: Any) -> set[tuple[str | None, str]]:
    messages = set()
    for _line, message, _comments, context in extract("python", handle, keywords=KEYWORDS):
        msgid = message[0] if isinstance(message, tuple) else message
        if msgid:
            messages.add((context, msgid))
    return messages


def test_every_message_dshweb_marks_is_in_the_catalog_translated() -> None:
    """A marked string that was never collected into the catalog (or collected and left
    untranslated) is English on a Chinese page: every one dshweb marks is translated."""
    (po,) = catalogs()
    catalog = read(po)
    translated = {
        (m.context, m.id[0] if isinstance(m.id, tuple) else m.id)
        for m in catalog
        if m.id and all(_strings(m.string)) and not m.fuzzy
    }
    marked = marked_messages()
    assert len(marked) > 500  # the walk found dshweb's messages
    missing = sorted(marked - translated, key=str)
    assert missing == [], f"marked but not translated in {po.name}: {missing}"
