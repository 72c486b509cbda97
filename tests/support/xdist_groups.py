"""The ``xdist_group`` marks kept by ``--dist loadgroup`` on this pytest, and a lane for
the browser tests.

pytest-xdist 3.8 groups a test by the ``@group`` it appends to the test's ``_nodeid``,
which pytest 9 no longer reads (a node's id is its ``_id``): every test would be a unit of
its own, each module-scoped fixture made again in every test process its tests land in.
Here the test processes write which test is in which group, and which tests drive a
browser, to the run's folder (tests/support/once.py) once they have collected, and the
scheduler of the process pytest started (:class:`GroupScheduling`, pytest-xdist's
loadscope with those groups as its scopes) reads it before it hands out any test.

The browser tests mostly wait (on a page, a server, a push) where the others mostly
compute: run last in every process, they left a core idle for minutes at the end of the
run. With three processes or more, the last one is their lane: it takes browser tests
from the start, from the end of the queue, while the others take the rest from its front
and then join it. A process never takes another kind of test after a browser test
(tests/conftest.py: pytest-playwright's event loop then runs in its main thread).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from xdist.remote import Producer  # type: ignore[import-untyped]  # no py.typed
from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]
from xdist.workermanage import WorkerController  # type: ignore[import-untyped]

from tests.support.once import RUN_DIR, write_for_the_run

GROUPS = "xdist-groups.json"


def scope_of(item: pytest.Item) -> str:
    """The unit of work ``item`` is handed out in: its group, else itself."""
    names = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group")})
    return "_".join(names) if names else item.nodeid


def write_groups(items: list[pytest.Item]) -> None:
    """In a test process of pytest-xdist: the group of each test in one, and the tests
    marked ``browser``, for the scheduler."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None or RUN_DIR not in os.environ:
        return
    groups = {item.nodeid: scope for item in items if (scope := scope_of(item)) != item.nodeid}
    browser = [item.nodeid for item in items if item.get_closest_marker("browser") is not None]
    write_for_the_run(GROUPS, json.dumps({"groups": groups, "browser": browser}))


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # untyped
    """loadscope whose scopes are the groups the test processes wrote (a test in none is
    a scope of its own), handed out in the order of the collection (the browser tests
    last: tests/conftest.py), the browser tests' lane taking them from the end."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False  # the collection's order, not by size
        self.groups: dict[str, str] | None = None
        self.browser: set[str] = set()
        """The scopes that drive a browser."""
        self.lane: WorkerController | None = None
        self.in_browser: set[WorkerController] = set()
        """The processes given a browser test: they take no other kind."""

    def schedule(self) -> None:
        if self.groups is None and self.collection_is_completed:
            path = Path(os.environ[RUN_DIR]) / GROUPS
            written = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            self.groups = written.get("groups", {})
            self.browser = {self._split_scope(nodeid) for nodeid in written.get("browser", [])}
            if len(self.nodes) >= 3:
                self.lane = self.nodes[-1]
        super().schedule()

    def _split_scope(self, nodeid: str) -> str:
        return (self.groups or {}).get(nodeid, nodeid)

    def _next_scope(self, node: WorkerController) -> str | None:
        """The scope ``node`` takes next, if one may be its: the lane the last browser
        scope; a process that ran a browser test only a browser scope; any, the first."""
        if not self.workqueue:
            return None
        first: str = next(iter(self.workqueue))
        last: str = next(reversed(self.workqueue))
        if node is self.lane and last in self.browser:
            return last
        if node in self.in_browser and first not in self.browser:
            return None  # no browser test is left (they come last)
        return first

    def _assign_work_unit(self, node: WorkerController) -> None:
        scope = self._next_scope(node)
        if scope is None:
            return
        work_unit = self.workqueue.pop(scope)
        if scope in self.browser:
            self.in_browser.add(node)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some(
            [collection.index(nodeid) for nodeid, done in work_unit.items() if not done]
        )

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        pending = self._pending_of(self.assigned_work[node])
        if self._next_scope(node) is None:
            # Nothing it may take: told so, it runs the tests it holds. (A process runs a
            # test once it knows the next, so untold it would keep its last one waiting,
            # idle, until the slowest process nears its end.) One that ran a browser test
            # still holding others is told once done: a browser scope may come to the front.
            if not self.workqueue or pending == 0:
                node.shutdown()
            return
        if pending <= 2:
            self._assign_work_unit(node)
