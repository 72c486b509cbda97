"""WCAG 2.1 AA on every page, in both themes and both languages (and in Chinese, no English
word left as the browser shows the page): axe-core (the engine of
the browsers' own accessibility checkers, bundled by the ``axe-playwright-python``
package) run in real Chromium finds no violation of its WCAG 2.0/2.1 A and AA rules nor
of its best practices (``AXE_TAGS``).

Pages: the sessions list, a session, its ledger, the settings index, a settings form with
its preview, the engine settings, the alerts, a new rule, the API tokens, the API docs,
the sign-in page, and the error pages (403, a refused form, 404, 500).
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.utils import translation
from playwright.sync_api import Page
from pytest_playwright.pytest_playwright import CreateContextCallback

from tests.site.test_chinese_pages import english_words

pytestmark = pytest.mark.browser

AXE = Path(str(files("axe_playwright_python") / "axe.min.js"))
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
AXE_TAGS = [*WCAG_AA, "best-practice"]
"""What axe checks: WCAG 2.1 A and AA, and axe's best practices (unique landmarks, one
``h1``, headings in order: what a screen reader's lists of landmarks and headings need)."""

PAGES = {
    "list": "/",
    "session": "/homes/local/sessions/manual-compact/",
    "ledger": "/homes/local/sessions/auto-compact/ledger.html",
    "settings": "/settings/",
    "settings-form": "/settings/sdk/context-truth/",
    "engine": "/settings/engine/",
    "cost": "/cost/",
    "alerts": "/alerts/",
    "new-rule": "/alerts/new/",
    "tokens": "/tokens/",
    "api-docs": "/api/v1/docs",
    "not-found": "/no/such/page/",
}
THEMES = ("light", "dark")
LANGUAGES = {"en": "en-US", "zh-hans": "zh-CN"}


def violations(page: Page) -> list[dict[str, Any]]:
    """What axe-core finds against ``AXE_TAGS`` in ``page`` as it is now (axe-core added
    to the page first, once)."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        "async (tags) => (await axe.run(document, {runOnly: {type: 'tag', values: tags}}))"
        ".violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => ({target: n.target, summary: n.failureSummary}))}))",
        AXE_TAGS,
    )
    return list(found)


def _said(found: list[dict[str, Any]]) -> str:
    """Each violation once, with its first node and how many more share its failure."""
    lines = []
    for violation in found:
        by_failure: dict[str, list[str]] = {}
        for node in violation["nodes"]:
            by_failure.setdefault(node["summary"], []).append(json.dumps(node["target"]))
        for summary, targets in by_failure.items():
            lines.append(
                f"{violation['id']}: {targets[0]} (+{len(targets) - 1} more) — "
                + " ".join(summary.split())
            )
    return "\n".join(lines)


def _page(new_context: CreateContextCallback, language: str) -> Page:
    """A signed-in page whose browser asks for ``language``."""
    return new_context(locale=LANGUAGES[language]).new_page()


def _settled(page: Page) -> None:
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(200)  # the socket's first push replaces the live parts


def _in_each_theme(page: Page, what: str) -> None:
    """axe-core finds no violation in ``page`` as it is now, in each theme.

    The themes are switched in place (the browser's preferred colour scheme, as a person
    switches their system's): dshweb's palette is CSS only (``light-dark()`` colours that
    follow ``color-scheme``; no script reads the scheme), so the page is the one a load in
    that theme shows. Its body's colours must differ between the themes (the switch took).
    """
    failures: list[str] = []
    colours: dict[str, str] = {}
    for theme in THEMES:
        page.emulate_media(color_scheme=theme)  # type: ignore[arg-type]
        colours[theme] = page.evaluate(
            "() => { const s = getComputedStyle(document.body);"
            " return `${s.color} on ${s.backgroundColor}`; }"
        )
        if found := violations(page):
            failures.append(f"{what} ({theme}):\n{_said(found)}")
    assert len(set(colours.values())) == len(THEMES), f"{what}: the theme did not switch {colours}"
    assert failures == [], "\n".join(failures)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", PAGES)
def test_a_page_has_no_wcag_violation(
    new_context: CreateContextCallback, name: str, language: str
) -> None:
    page = _page(new_context, language)
    page.goto(PAGES[name])
    _settled(page)
    assert page.evaluate("document.documentElement.lang") == language
    if language == "zh-hans":  # as the browser shows it, live updates included
        english = english_words(page.content())
        assert not english, f"{name} in Chinese has English words: {english}"
    _in_each_theme(page, f"{name} ({language})")


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_sign_in_page_has_no_wcag_violation(
    new_context: CreateContextCallback, language: str
) -> None:
    page = _page(new_context, language)
    page.context.clear_cookies()  # signed out
    page.goto("/accounts/login/")
    _in_each_theme(page, f"sign-in ({language})")


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_refused_form_has_no_wcag_violation(
    new_context: CreateContextCallback, language: str
) -> None:
    page = _page(new_context, language)
    page.goto("/alerts/")
    # A form without its CSRF token: Django refuses it with the site's 403 page.
    page.evaluate(
        "() => { const f = document.createElement('form'); f.method = 'post';"
        " f.action = '/alerts/new/'; document.body.append(f); f.submit(); }"
    )
    page.wait_for_selector("#forbidden")
    _in_each_theme(page, f"403 csrf ({language})")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("template", ["403.html", "500.html"])
def test_an_error_page_has_no_wcag_violation(
    new_context: CreateContextCallback, template: str, language: str
) -> None:
    """The pages dshweb answers with when it refuses (403) or fails (500), rendered as the
    server renders them, shown at the server's address (its styles load)."""
    request = RequestFactory().get("/settings/")
    request.user = AnonymousUser()
    with translation.override(language):
        html = render_to_string(template, {"request": request}, request=request)
    page = _page(new_context, language)
    page.goto("/accounts/login/")
    page.set_content(html)
    _in_each_theme(page, f"{template} ({language})")
