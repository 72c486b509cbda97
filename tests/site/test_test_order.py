"""The suite's own order (tests/support/durations.py): the longest units of work of the
runs before first, a test never timed first of all, the browser tests' longest last."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from tests.support import durations
from tests.support.once import RUN_DIR


@dataclass(frozen=True)
class _Item:
    nodeid: str
    scope: str
    browser: bool = False


ITEMS = [
    _Item("t.py::short", "t.py::short"),
    _Item("g.py::one", "g.py"),
    _Item("t.py::new", "t.py::new"),
    _Item("b.py::quick", "b.py::quick", browser=True),
    _Item("g.py::two", "g.py"),
    _Item("b.py::slow", "b.py::slow", browser=True),
    _Item("t.py::long", "t.py::long"),
]
SECONDS = {
    "t.py::short": 0.1,
    "g.py::one": 2.0,
    "g.py::two": 2.5,  # the group: 4.5 s
    "t.py::long": 6.0,
    "b.py::quick": 1.0,
    "b.py::slow": 9.0,
}


def _sorted(monkeypatch: pytest.MonkeyPatch, run: Path) -> list[str]:
    monkeypatch.setenv(RUN_DIR, str(run))
    items = cast(list[pytest.Item], list(ITEMS))
    durations.sort_longest_first(
        items,
        lambda item: cast(_Item, item).scope,
        last=lambda item: cast(_Item, item).browser,
    )
    return [item.nodeid for item in items]


def test_the_longest_scopes_go_first_and_the_longest_browser_test_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / durations.SNAPSHOT).write_text(json.dumps(SECONDS))
    assert _sorted(monkeypatch, tmp_path) == [
        "t.py::new",
        "t.py::long",
        "g.py::one",
        "g.py::two",
        "t.py::short",
        "b.py::quick",
        "b.py::slow",
    ]


def test_without_figures_the_order_is_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _sorted(monkeypatch, tmp_path) == [item.nodeid for item in ITEMS]
    (tmp_path / durations.SNAPSHOT).write_text("{not json")
    assert _sorted(monkeypatch, tmp_path) == [item.nodeid for item in ITEMS]


def test_a_run_merges_its_figures_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache" / "test-durations.json"
    monkeypatch.setattr(durations, "FILE", cache)
    cache.parent.mkdir()
    cache.write_text(json.dumps({"kept.py::a": 1.0, "t.py::x": 9.0}))
    recorder = durations.Recorder()
    for when, took in (("setup", 0.25), ("call", 1.5), ("teardown", 0.25)):
        recorder.pytest_runtest_logreport(cast(pytest.TestReport, _Report("t.py::x", when, took)))
    recorder.pytest_sessionfinish()
    assert json.loads(cache.read_text()) == {"kept.py::a": 1.0, "t.py::x": 2.0}
    monkeypatch.setenv(RUN_DIR, str(tmp_path))
    durations.share_with_the_run()
    assert durations.of_the_run() == {"kept.py::a": 1.0, "t.py::x": 2.0}


@dataclass(frozen=True)
class _Report:
    nodeid: str
    when: str
    duration: float
