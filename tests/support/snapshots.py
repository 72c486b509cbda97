"""Hand-made :class:`SessionSnapshot` values for the list's tests (one event, nothing
measured, only what a test names set), and the snapshot of a one-session fixture home."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.log.frames import split_frames
from dshweb.core.log.home import session_logs
from tests.conftest import FIXTURE_HOMES


def session_snapshot(
    session_id: str, last_time: int = 1, *, parent: str | None = None, **fields: Any
) -> SessionSnapshot:
    """A session last active at ``last_time``; a sub-agent of ``parent`` when given."""
    snapshot = SessionSnapshot(
        session_id=session_id,
        path=f"sessions/--p--/{session_id}/session.v4.jsonl.zstd",
        format_version=4,
        cwd="/w",
        created_at=0,
        parent_session=parent,
        origin="subagent" if parent else None,
        live=False,
        title=None,
        model=None,
        last_seq=0,
        events=1,
        first_time=0,
        last_time=last_time,
        turns=0,
        token_usage={},
        context_pressure={},
        context_breakdown={},
        point=None,
        measured_tokens=0,
        largest_nodes=(),
        errors=(),
    )
    return replace(snapshot, **fields)


def fixture_snapshot(home_name: str, at_seq: int | None = None) -> SessionSnapshot:
    """The one session of fixture home ``home_name``, folded through ``at_seq``."""
    index = HomeIndex(FIXTURE_HOMES / home_name, stop_after_seq=at_seq)
    index.refresh()
    (folder,) = index.trackers
    return index.snapshot(folder)


def home_with_a_young_session(tmp_path: Path) -> tuple[HomeIndex, Path, Path]:
    """A copy of ``pace-steady`` with a second session folder, ``young``, holding the
    same log up to its second ``step/start`` (a window and a model, one step's growth
    measured: the first's, from what its request sent), folded: the index, the
    young session's folder and the older one's."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "pace-steady", home)
    (log,) = session_logs(home)
    data = log.path.read_bytes()
    chunks, error = split_frames(data, 0)
    assert error is None
    starts, end = 0, 0
    for chunk in chunks:
        starts += chunk.text.count(b'"type":"step/start"')
        end = chunk.end
        if starts >= 2:
            break
    young = log.path.parent.parent / "young"
    young.mkdir()
    (young / log.path.name).write_bytes(data[:end])
    index = HomeIndex(home)
    index.refresh()
    return index, young, log.path.parent


LIVE_PART_IDS = (
    "session-header",
    "context-ring",
    "context-pressure",
    "breakdown",
    "fold-preview",
    "token-usage",
    "compaction-point",
    "session-cost",
    "told",
    "timeline",
    "ledger",
    "largest-nodes",
    "session-facts",
    "session-errors",
)
"""The ids of a session page's live parts, in page order (what its socket replaces)."""


def squeezed(html: str) -> str:
    """``html`` with each run of white space as one space: what a page says, whatever the
    line breaks and indentation of its templates (tests/site/test_template_layout.py)."""
    return " ".join(html.split())


def data_attributes(page: str, element_id: str) -> dict[str, str]:
    """The ``data-*`` attributes of the element of ``page`` with id ``element_id``."""
    tag = re.search(rf'<[a-z]+[^>]*\bid="{element_id}"[^>]*>', page, re.S)
    assert tag is not None, element_id
    return dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', tag.group(0)))
