"""How long each test took in the runs before, kept in this user's cache, so that a run
hands out its longest units of work first and ends on short ones.

Handed out in the collection's order, a run ended on whatever came last (the slow
process tests of ``tests/site``): both cores mostly idle for its last ~10 s while one
test waited out a period. The process pytest started records each test's time (set-up,
call and tear-down, as the test processes report them) and, when the run ends, merges
them into :data:`FILE`; as it starts, it copies that file into the run's folder, so every
test process of the run orders its collection by the same figures (pytest-xdist refuses
processes that collected differently). Only the order changes: a run with no figures (a
new machine, ``XDG_CACHE_HOME`` elsewhere) keeps the order it had, and a test without
one goes first.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.once import RUN_DIR, write_for_the_run, write_whole

FILE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "dshweb"
    / "test-durations.json"
)
"""Each test's seconds in the last run that ran it, by node id."""
SNAPSHOT = "test-durations.json"
"""The copy of :data:`FILE` in the run's folder, read by its test processes."""


def _read(path: Path) -> dict[str, float]:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: float(v) for k, v in found.items() if isinstance(v, int | float)}


def share_with_the_run() -> None:
    """In the process pytest started, before its test processes start: the figures of
    the runs before, for them all."""
    write_for_the_run(SNAPSHOT, json.dumps(_read(FILE)))


def of_the_run() -> dict[str, float]:
    """The figures this run's test processes order by (none outside a run's folder)."""
    return _read(Path(os.environ[RUN_DIR]) / SNAPSHOT) if RUN_DIR in os.environ else {}


class Recorder:
    """A plugin of the process pytest started: the seconds of each test the run reported,
    merged into :data:`FILE` when the run ends (a cache that cannot be written is left as
    it is)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        if not self.seconds:
            return
        with contextlib.suppress(OSError):
            FILE.parent.mkdir(parents=True, exist_ok=True)
            merged = _read(FILE) | {k: round(v, 3) for k, v in self.seconds.items()}
            write_whole(FILE, json.dumps(merged, sort_keys=True))


def sort_longest_first(
    items: list[pytest.Item],
    scope_of: Callable[[pytest.Item], str],
    last: Callable[[pytest.Item], bool],
) -> None:
    """Sort ``items`` by the runs before: each scope (a unit of work handed out whole) by
    its tests' sum, the longest first, and one with a test never timed before first of
    all; the ``last`` ones after the others, their longest at the very end (the browser
    tests' lane takes them from the end). Without figures ``items`` stay as they are."""
    seconds = of_the_run()
    if not seconds:
        return
    scopes = {item: scope_of(item) for item in items}
    total: dict[str, float] = {}
    for item, scope in scopes.items():
        took = seconds.get(item.nodeid, math.inf)
        total[scope] = total.get(scope, 0.0) + took
    ends = {item: last(item) for item in items}
    items.sort(key=lambda i: (ends[i], total[scopes[i]] if ends[i] else -total[scopes[i]]))
