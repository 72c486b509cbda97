"""The sessions list: newest activity first, each sub-agent under its parent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dshweb.core.display import ContextReading, context_reading
from dshweb.core.session import SessionSnapshot


@dataclass(frozen=True, slots=True)
class SessionEntry:
    """One row of the sessions list: sub-agents follow their parent, one level deeper."""

    snapshot: SessionSnapshot
    reading: ContextReading
    depth: int
    orphan: bool
    """A sub-agent listed at the top: its parent is not in this home (or the chain loops)."""


def session_tree(
    snapshots: Sequence[SessionSnapshot],
    reading_of: Callable[[SessionSnapshot], ContextReading] = context_reading,
) -> list[SessionEntry]:
    """Sessions in list order: newest activity first, each sub-agent right under its parent.

    A parent is placed by the newest activity anywhere in its subtree, so a session whose
    sub-agent is busy comes first. Sub-agents whose parent is missing stay at the top
    level, marked ``orphan``; a broken parent chain that loops is cut where it repeats.
    """
    by_id = {s.session_id: s for s in snapshots}
    children: dict[str, list[SessionSnapshot]] = {}
    roots: list[SessionSnapshot] = []
    for shot in snapshots:
        parent = shot.parent_session
        if parent is not None and parent in by_id and parent != shot.session_id:
            children.setdefault(parent, []).append(shot)
        else:
            roots.append(shot)

    newest: dict[str, int] = {}

    def subtree_newest(shot: SessionSnapshot, seen: frozenset[str]) -> int:
        if shot.session_id in newest:
            return newest[shot.session_id]
        value = shot.last_time or 0
        for child in children.get(shot.session_id, []):
            if child.session_id not in seen:
                value = max(value, subtree_newest(child, seen | {child.session_id}))
        newest[shot.session_id] = value
        return value

    def order(group: list[SessionSnapshot]) -> list[SessionSnapshot]:
        return sorted(
            group, key=lambda s: (-subtree_newest(s, frozenset({s.session_id})), s.session_id)
        )

    entries: list[SessionEntry] = []
    placed: set[str] = set()

    def place(shot: SessionSnapshot, depth: int) -> None:
        placed.add(shot.session_id)
        orphan = depth == 0 and shot.parent_session is not None
        entries.append(SessionEntry(shot, reading_of(shot), depth, orphan))
        for child in order(children.get(shot.session_id, [])):
            if child.session_id not in placed:
                place(child, depth + 1)

    for root in order(roots):
        place(root, 0)
    # Sessions only reachable through a parent loop: show them rather than lose them.
    for shot in order([s for s in snapshots if s.session_id not in placed]):
        if shot.session_id not in placed:
            place(shot, 0)
    return entries
