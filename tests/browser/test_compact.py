"""The Compact button in the browser, against the real ``dsh web`` and the fake model.

A ``dsh web`` (:class:`~dshweb.dsh_web.managed.ManagedDshWeb`, the tests' fake model in its
environment) runs on its own empty DSH home; a dshweb server of this module's own watches
that home with ``DSHWEB_ENGINE_URL`` set to the engine's launch URL. Sessions are made
and prompted through the engine's API, as ``tests/test_engine_client.py`` does.

This module overrides the package's ``server`` fixture with its own (module scope), so
the package's ``page`` signs in to this server (as the superuser, who has
``compaction.compact``) and prints its output when a test fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from dshweb.sessions.display.figures import format_page_tokens
from tests.browser.conftest import SameDocument
from tests.dsh_web.test_client import (
    Setup,
    SlowTurns,
    create,
    engine_setup,
    prompt,
    turns_at_least,
)
from tests.support.homes import PROFILE
from tests.support.server import DshwebServer, serving

pytestmark = [pytest.mark.browser, pytest.mark.dsh]

COMPACT_MS = 30_000
"""Longest wait for a compaction to show (the fake model summarises at once)."""
DONE = re.compile(
    r"Compacted ([\d,]+) history items \(~([\d,]+) tokens\); context (\S+) → (\S+) \(freed (\S+)\)"
)

RECORD_STATES = """() => {
  const seen = [];
  const note = () => {
    const status = document.getElementById('compact-status');
    if (status && seen[seen.length - 1] !== status.dataset.state) seen.push(status.dataset.state);
  };
  note();
  new MutationObserver(note).observe(document.body, {
    subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'],
  });
  window.__compactStates = seen;
}"""
"""Record each state ``#compact-status`` shows, from now on (the element is swapped)."""


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """The real ``dsh web`` on an empty home, answering through the fake model."""
    script = SlowTurns()
    with engine_setup(tmp_path_factory.mktemp("browser-compact"), script) as ready:
        try:
            yield ready
        finally:
            script.release()  # before the engine stops: a held turn would keep it busy


@pytest.fixture(scope="module")
def server(engine: Setup, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    """dshweb watching the engine's home, with the engine's launch URL."""
    yield from serving(
        DshwebServer(
            engine.home,
            tmp_path_factory.mktemp("dshweb-compact-data"),
            extra_env={"DSHWEB_ENGINE_URL": engine.launch_url},
        )
    )


def _snapshot(home: Path, session_id: str) -> SessionSnapshot:
    """What dshweb's core folds from the session's log now."""
    index = HomeIndex(home, profile=PROFILE)
    index.refresh()
    (folder,) = [f for f, t in index.trackers.items() if t.session_id == session_id]
    return index.snapshot(folder)


def _open(page: Page, session_id: str) -> SameDocument:
    """Open the session's page, wait for its socket, and start recording the states."""
    page.goto(f"/homes/local/sessions/{session_id}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(page.locator("#compact-status")).to_have_attribute("data-state", "idle")
    page.evaluate(RECORD_STATES)
    return SameDocument(page)


def _states(page: Page) -> list[str]:
    return [str(state) for state in page.evaluate("window.__compactStates")]


def test_compact_folds_the_session_and_the_page_follows(
    page: Page, engine: Setup, artifacts: Path
) -> None:
    from tests.fixtures.dshrun import wait_for_log

    api = engine.client()
    create(engine, api, "b-compact")
    for turn in (1, 2, 3):
        prompt(api, "b-compact", f"turn {turn}: " + "words " * 400)
        wait_for_log(engine.home, "b-compact", turns_at_least(turn), timeout=30)
    before = context_gauge(_snapshot(engine.home, "b-compact")).used
    assert before is not None

    same = _open(page, "b-compact")
    ring = page.locator("#context-ring")
    expect(ring).to_have_attribute("data-used", str(before))
    page.click("#compact-button")

    status = page.locator("#compact-status")
    expect(status).to_have_attribute("data-state", "done", timeout=COMPACT_MS)
    expect(status).to_have_text(DONE, timeout=COMPACT_MS)
    snapshot = _snapshot(engine.home, "b-compact")
    (compaction,) = [f for f in snapshot.ledger.compactions if f.kind == "manual"]
    after = context_gauge(snapshot).used
    assert compaction.before == before and compaction.after == after, (compaction, before, after)
    expect(ring).to_have_attribute("data-used", str(after))
    assert after is not None and after < before
    expect(status).to_have_text(_done_text(status.text_content() or "", compaction))
    states = _states(page)
    assert states[0] == "idle" and states[-1] == "done" and "failed" not in states, states
    assert set(states) <= {"idle", "requested", "running", "done"}, states
    print(f"compact states seen: {states}")
    same.check()
    page.screenshot(path=artifacts / "compact-done.png", full_page=True)


def _done_text(shown: str, compaction: Compaction) -> str:
    """The line the page must show: DSH's counts as shown, the context figures from the
    fold in the log."""
    found = DONE.fullmatch(shown)
    assert found is not None, shown
    assert compaction.before is not None and compaction.after is not None
    return (
        f"Compacted {found[1]} history items (~{found[2]} tokens); "
        f"context {format_page_tokens(compaction.before)} → {format_page_tokens(compaction.after)} "
        f"(freed {format_page_tokens(compaction.before - compaction.after)})"
    )


def test_compact_while_a_turn_runs_fails_as_busy(
    page: Page, engine: Setup, artifacts: Path
) -> None:
    from tests.fixtures.dshrun import wait_for_log

    api = engine.client()
    create(engine, api, "b-busy")
    prompt(api, "b-busy", "hello")
    wait_for_log(engine.home, "b-busy", turns_at_least(1), timeout=30)
    same = _open(page, "b-busy")

    script = engine.script
    script.slow_turn()
    try:
        prompt(api, "b-busy", "!slow please")
        assert script.arrived.wait(30)
        page.click("#compact-button")
        status = page.locator("#compact-status")
        expect(status).to_have_attribute("data-state", "failed", timeout=COMPACT_MS)
        expect(status).to_have_text(
            "The session is busy: its agent is not idle. Try again when it is idle."
        )
    finally:
        script.release()
    wait_for_log(engine.home, "b-busy", turns_at_least(2), timeout=30)
    states = _states(page)
    assert states[0] == "idle" and states[-1] == "failed" and "done" not in states, states
    print(f"compact states seen: {states}")
    expect(status).to_have_attribute("data-state", "failed")
    same.check()
    page.screenshot(path=artifacts / "compact-busy.png", full_page=True)
