"""The ``xdist_group`` marks kept by ``--dist loadgroup`` on this pytest.

pytest-xdist 3.8 groups a test by the ``@group`` it appends to the test's ``_nodeid``,
which pytest 9 no longer reads (a node's id is its ``_id``): every test would be a unit of
its own, each module-scoped fixture made again in every test process its tests land in.
Here the test processes write which test is in which group to the run's folder
(tests/support/once.py) once they have collected, and the scheduler of the process pytest
started (:class:`GroupScheduling`, pytest-xdist's loadscope with those groups as its
scopes) reads it before it hands out any test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from xdist.remote import Producer  # type: ignore[import-untyped]  # no py.typed
from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

from tests.support.once import RUN_DIR

GROUPS = "xdist-groups.json"


def write_groups(items: list[pytest.Item]) -> None:
    """In a test process of pytest-xdist: the group of each test in one, for the
    scheduler."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None or RUN_DIR not in os.environ:
        return
    groups = {}
    for item in items:
        names = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group")})
        if names:
            groups[item.nodeid] = "_".join(names)
    path = Path(os.environ[RUN_DIR]) / GROUPS
    scratch = path.with_name(f".{GROUPS}-{worker}")
    scratch.write_text(json.dumps(groups), encoding="utf-8")
    scratch.replace(path)  # every process collects the same tests: any one's will do


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # untyped
    """loadscope whose scopes are the groups the test processes wrote (a test in none is
    a scope of its own), handed out in the order of the collection: the browser tests
    stay last (tests/conftest.py)."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False  # the collection's order, not by size
        self.groups: dict[str, str] | None = None

    def schedule(self) -> None:
        if self.groups is None and self.collection_is_completed:
            path = Path(os.environ[RUN_DIR]) / GROUPS
            self.groups = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        super().schedule()

    def _split_scope(self, nodeid: str) -> str:
        return (self.groups or {}).get(nodeid, nodeid)
