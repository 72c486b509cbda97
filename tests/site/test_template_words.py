"""No words a person reads are left outside the translation tags of a template: every
template of dshweb, read as Django's lexer reads it, with what its ``{% translate %}`` and
``{% blocktranslate %}`` tags hold taken out, has no English word left in its text or in
the attributes a person reads (``title``, ``aria-label``, ``placeholder``, ``alt``,
``data-label``). Names that are the same in every language (dshweb, DSH, CSV, JSON, UTC,
the names in ``<code>``) are not words to translate."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from django.template.base import Lexer, TokenType

from tests.conftest import REPO

TEMPLATES = sorted((REPO / "dshweb").glob("*/templates/**/*.html"))

READ_ATTRIBUTES = {"title", "aria-label", "placeholder", "alt", "data-label"}
LITERAL_ELEMENTS = {"code", "pre", "kbd", "script", "style"}
"""Their text is the same in every language (a path, a command, a key) or is not read."""

SAME_IN_EVERY_LANGUAGE = {"dshweb", "DSH", "CSV", "JSON", "UTC", "API", "HMAC", "SHA256", "URL"}
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]")
HOLE = "\x00"
"""What stands in for a variable, a tag and a translated text."""


def _outside_translation(source: str) -> str:
    """The template's text with every tag, variable, comment (``{# #}`` or a
    ``{% comment %}`` block) and translated text replaced by :data:`HOLE` (a tag with
    spaces around it)."""
    kept: list[str] = []
    inside = 0
    for token in Lexer(source).tokenize():
        if token.token_type is TokenType.BLOCK:
            name = token.contents.split()[0]
            if name in ("blocktranslate", "blocktrans", "comment"):
                inside += 1
            elif name in ("endblocktranslate", "endblocktrans", "endcomment"):
                inside -= 1
            kept.append(f" {HOLE} ")  # inside a tag too: <span{% if … %} class="warn"{% endif %}>
        elif token.token_type is TokenType.TEXT and not inside:
            kept.append(token.contents)
        else:
            kept.append(HOLE)
    return "".join(kept)


class _ReadText(HTMLParser):
    """The texts a person reads in a page: its text (outside :data:`LITERAL_ELEMENTS`) and
    the values of :data:`READ_ATTRIBUTES`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._literal = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in LITERAL_ELEMENTS:
            self._literal += 1
        self.texts.extend(value for name, value in attrs if name in READ_ATTRIBUTES and value)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.texts.extend(value for name, value in attrs if name in READ_ATTRIBUTES and value)

    def handle_endtag(self, tag: str) -> None:
        if tag in LITERAL_ELEMENTS and self._literal:
            self._literal -= 1

    def handle_data(self, data: str) -> None:
        if not self._literal:
            self.texts.append(data)


def untranslated_words(source: str) -> list[str]:
    """The English words of ``source`` (a template) outside its translation tags."""
    reader = _ReadText()
    reader.feed(_outside_translation(source))
    reader.close()
    return [
        word
        for text in reader.texts
        for piece in text.split(HOLE)
        for word in WORD.findall(piece)
        if word not in SAME_IN_EVERY_LANGUAGE
    ]


def test_every_template_keeps_its_words_in_translation_tags() -> None:
    assert len(TEMPLATES) > 50
    found = {
        str(path.relative_to(REPO)): words
        for path in TEMPLATES
        if (words := untranslated_words(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_check_finds_words_outside_the_tags() -> None:
    source = (
        '{% load i18n %}<p title="Hover me">Hello {{ name }}</p>'
        '<p>{% translate "Fine" %} <code>/compact</code> CSV</p>'
        "{% blocktranslate %}Also {{ fine }}{% endblocktranslate %}"
        "<button aria-label=\"{% translate 'Close' %}\">×</button>{# a note #}"
        "{% comment %}\n  A longer note, on lines of its own\n{% endcomment %}"
        "<script>const words = 'not read';</script>"
    )
    assert untranslated_words(source) == ["Hover", "me", "Hello"]


def test_templates_are_found_where_the_apps_keep_them() -> None:
    names = {Path(p).name for p in TEMPLATES}
    assert {"base.html", "session_list.html", "_context_ring.html", "row.html"} <= names
