"""The sessions list's natural order, and how it follows what changed.

Pure, no Django. :func:`session_tree` gives one home's order: newest activity first,
each sub-agent under its parent.

:class:`HomeTree` is one home's order kept as groups (a top-level session and the
sub-agents under it, in :func:`session_tree` order) sorted by their key, with the home's
counts by band and live/idle and its spend (:mod:`dshweb.core.listing.spend`).
:meth:`HomeTree.updated` makes the tree of the home's next view from this one and the
sessions that changed: only the groups those sessions are in, were in or join are laid
out again, and the counts and spend follow by taking their old entries off and adding
the new ones, so a list update costs what changed, not the home.
A home whose parent links loop, or a change that touches a quarter of it, is laid out
from nothing; either way the result equals :func:`session_tree` of every session.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import Protocol

from dshweb.core.fold.gauge import Band, ContextGauge, context_gauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.homes import DEFAULT_HOME_NAME
from dshweb.core.listing.spend import HomeSpend

BANDS = (Band.AMPLE, Band.MODERATE, Band.TIGHT, Band.CRITICAL, Band.UNKNOWN)
"""The bands in the order the counts show them."""


@dataclass(frozen=True, slots=True)
class SessionEntry:
    """One row of the sessions list: sub-agents follow their parent, one level deeper."""

    snapshot: SessionSnapshot
    gauge: ContextGauge
    depth: int
    orphan: bool
    """A sub-agent listed at the top: its parent is not in this home (or the chain loops)."""
    home: str = DEFAULT_HOME_NAME
    """The name of the session's home (a session id is unique only within its home)."""

    @property
    def key(self) -> tuple[str, str]:
        """(home, session id): the session among every home's."""
        return (self.home, self.snapshot.session_id)


def session_tree(
    snapshots: Sequence[SessionSnapshot],
    gauge_of: Callable[[SessionSnapshot], ContextGauge] = context_gauge,
    home: str = DEFAULT_HOME_NAME,
) -> list[SessionEntry]:
    """Sessions in list order: newest activity first, each sub-agent right under its parent.

    A parent is placed by the newest activity anywhere in its subtree, so a session whose
    sub-agent is busy comes first. Sub-agents whose parent is missing stay at the top
    level, marked ``orphan``; a broken parent chain that loops is cut where it repeats.
    """
    children, roots = _family(snapshots)
    newest: dict[str, int] = {}

    def subtree_newest(shot: SessionSnapshot, seen: frozenset[str]) -> int:
        if shot.session_id in newest:
            return newest[shot.session_id]
        value = shot.last_time or 0
        for child in children.get(shot.session_id, ()):
            if child.session_id not in seen:
                value = max(value, subtree_newest(child, seen | {child.session_id}))
        newest[shot.session_id] = value
        return value

    def key(shot: SessionSnapshot) -> tuple[int, str]:
        # Most sessions have no sub-agent: their subtree is themselves.
        if shot.session_id not in children:
            return (-(shot.last_time or 0), shot.session_id)
        return (-subtree_newest(shot, frozenset({shot.session_id})), shot.session_id)

    def order(group: list[SessionSnapshot]) -> list[SessionSnapshot]:
        return sorted(group, key=key)

    entries: list[SessionEntry] = []
    placed: set[str] = set()

    def place(shot: SessionSnapshot, depth: int) -> None:
        placed.add(shot.session_id)
        orphan = depth == 0 and shot.parent_session is not None
        entries.append(SessionEntry(shot, gauge_of(shot), depth, orphan, home))
        below = children.get(shot.session_id)
        if below is not None:
            for child in order(below):
                if child.session_id not in placed:
                    place(child, depth + 1)

    for root in order(roots):
        place(root, 0)
    # Sessions only reachable through a parent loop: show them rather than lose them.
    for shot in order([s for s in snapshots if s.session_id not in placed]):
        if shot.session_id not in placed:
            place(shot, 0)
    return entries


def _family(
    snapshots: Sequence[SessionSnapshot],
) -> tuple[dict[str, list[SessionSnapshot]], list[SessionSnapshot]]:
    """The sub-agents of each session whose parent is listed, and every other session."""
    ids = {s.session_id for s in snapshots}
    children: dict[str, list[SessionSnapshot]] = {}
    roots: list[SessionSnapshot] = []
    for shot in snapshots:
        parent = shot.parent_session
        if parent is not None and parent in ids and parent != shot.session_id:
            children.setdefault(parent, []).append(shot)
        else:
            roots.append(shot)
    return children, roots


class Listed(Protocol):
    """A session as a home's view holds it: its snapshot and its gauge."""

    @property
    def snapshot(self) -> SessionSnapshot: ...

    @property
    def gauge(self) -> ContextGauge: ...


GroupKey = tuple[int, str]
"""A group's place: (minus the newest activity in it, its top session's id)."""

REBUILD_SHARE = 4
"""A change touching more than one session in this many lays the tree out from nothing."""


@dataclass(frozen=True, slots=True)
class Tally:
    """One home's sessions counted by band and by live/idle."""

    total: int = 0
    live: int = 0
    bands: tuple[int, ...] = (0,) * len(BANDS)
    """Per band, in :data:`BANDS` order."""

    def plus(self, entries: Iterable[SessionEntry], sign: int = 1) -> Tally:
        total, live, bands = self.total, self.live, list(self.bands)
        for entry in entries:
            total += sign
            live += sign * entry.snapshot.live
            bands[BANDS.index(entry.gauge.band)] += sign
        return Tally(total, live, tuple(bands))


class HomeTree:
    """One home's sessions in list order, kept as groups (see the module docstring).

    Immutable once made; :attr:`entries` (the whole list, flat) is laid out on first use.
    """

    def __init__(
        self,
        home: str,
        groups: dict[str, tuple[SessionEntry, ...]],
        keys: list[GroupKey],
        *,
        looped: bool,
        index: dict[str, str],
        waiting: dict[str, frozenset[str]],
        tally: Tally | None = None,
        spend: HomeSpend | None = None,
    ) -> None:
        self.home = home
        self._groups = groups
        """Top session id → its group's entries."""
        self._keys = keys
        """Every group's key in list order (sorted, unless parent links loop)."""
        self.looped = looped
        """Some parent links loop: the tree is always laid out from nothing."""
        self._index = index
        """Each session id → the top session of its group."""
        self._waiting = waiting
        """A parent id not in the home → the orphans at the top that name it."""
        self._tally = tally
        self._spend = spend

    @classmethod
    def build(
        cls,
        snapshots: Sequence[SessionSnapshot],
        gauge_of: Callable[[SessionSnapshot], ContextGauge] = context_gauge,
        home: str = DEFAULT_HOME_NAME,
    ) -> HomeTree:
        entries = session_tree(snapshots, gauge_of, home)
        ids = {s.session_id for s in snapshots}
        groups = dict(_split(entries))
        index = {e.snapshot.session_id: top for top, group in groups.items() for e in group}
        waiting: dict[str, frozenset[str]] = {}
        _wait(waiting, groups, add=True)
        keys = [_key(group) for group in groups.values()]  # session_tree's order
        tree = cls(home, groups, keys, looped=_loops(entries, ids), index=index, waiting=waiting)
        tree.__dict__["entries"] = tuple(entries)
        return tree

    def updated(
        self,
        sessions: Mapping[str, Listed],
        touched: Iterable[str],
    ) -> HomeTree:
        """The tree of the home's next view: ``sessions`` (by id) every session it has,
        ``touched`` those changed, added or removed since this tree."""
        touched = set(touched)

        def gauge_of(shot: SessionSnapshot) -> ContextGauge:
            return sessions[shot.session_id].gauge

        def rebuilt() -> HomeTree:
            shots = [view.snapshot for view in sessions.values()]
            return HomeTree.build(shots, gauge_of, self.home)

        index = self._index
        if self.looped or len(touched) * REBUILD_SHARE > max(len(sessions), len(index)):
            return rebuilt()
        redo = {index[sid] for sid in touched if sid in index}
        for sid in touched:
            now = sessions.get(sid)
            parent = now.snapshot.parent_session if now is not None else None
            if parent is not None and parent in index:
                redo.add(index[parent])  # it joins (or stays in) its parent's group
            redo |= self._waiting.get(sid, frozenset())  # orphans that find their parent
        old = {top: self._groups[top] for top in redo}
        members = {e.snapshot.session_id for group in old.values() for e in group}
        members = (members | touched) & sessions.keys()
        shots = [sessions[sid].snapshot for sid in members]
        entries = session_tree(shots, gauge_of, self.home)
        if _loops(entries, members):
            return rebuilt()
        new = dict(_split(entries))
        groups, keys, index = dict(self._groups), list(self._keys), dict(index)
        waiting = dict(self._waiting)
        _wait(waiting, old, add=False)
        for top, group in old.items():
            del groups[top]
            del keys[bisect.bisect_left(keys, _key(group))]
            for entry in group:
                del index[entry.snapshot.session_id]
        for top, group in new.items():
            groups[top] = group
            bisect.insort(keys, _key(group))
            for entry in group:
                index[entry.snapshot.session_id] = top
        _wait(waiting, new, add=True)
        tally, spend = self._tally, self._spend
        if tally is not None:
            tally = tally.plus(chain.from_iterable(old.values()), -1).plus(entries)
        if spend is not None:
            gone = (e.snapshot for e in chain.from_iterable(old.values()))
            spend = spend.changed(gone, (e.snapshot for e in entries))
        return HomeTree(
            self.home,
            groups,
            keys,
            looped=False,
            index=index,
            waiting=waiting,
            tally=tally,
            spend=spend,
        )

    @cached_property
    def entries(self) -> tuple[SessionEntry, ...]:
        """Every session in list order."""
        return tuple(self.in_order())

    def in_order(self) -> Iterator[SessionEntry]:
        """The entries in list order, laid out as they are read (a page reads only its own)."""
        groups = self._groups
        return chain.from_iterable(groups[top] for _, top in self._keys)

    def keyed_groups(self) -> Iterator[tuple[int, str, str, tuple[SessionEntry, ...]]]:
        """Each group keyed by its place among several homes' lists: newest activity in
        it first, then by home and top session id (each home's own order kept)."""
        home, groups = self.home, self._groups
        return ((newest, home, top, groups[top]) for newest, top in self._keys)

    @property
    def tally(self) -> Tally:
        if self._tally is None:
            self._tally = Tally().plus(chain.from_iterable(self._groups.values()))
        return self._tally

    @property
    def spend(self) -> HomeSpend:
        """The home's tokens by day and project (summed on first use, then kept by
        :meth:`updated`)."""
        if self._spend is None:
            shots = (e.snapshot for e in chain.from_iterable(self._groups.values()))
            self._spend = HomeSpend.of(shots)
        return self._spend

    def __len__(self) -> int:
        return len(self._index)


def _wait(
    waiting: dict[str, frozenset[str]], groups: Mapping[str, tuple[SessionEntry, ...]], *, add: bool
) -> None:
    """Record (or forget) in ``waiting`` the parent each orphan at the top of ``groups``
    names."""
    for top in groups:
        parent = groups[top][0].snapshot.parent_session
        if parent is None or parent == top:
            continue
        now = waiting.get(parent, frozenset())
        now = now | {top} if add else now - {top}
        if now:
            waiting[parent] = now
        else:
            waiting.pop(parent, None)


def _split(entries: Sequence[SessionEntry]) -> Iterator[tuple[str, tuple[SessionEntry, ...]]]:
    """Each top-level entry's id with its group (it and the deeper entries after it)."""
    start = 0
    for at in range(1, len(entries) + 1):
        if at == len(entries) or entries[at].depth == 0:
            yield entries[start].snapshot.session_id, tuple(entries[start:at])
            start = at


def _key(group: Sequence[SessionEntry]) -> GroupKey:
    newest = max(e.snapshot.last_time or 0 for e in group)
    return (-newest, group[0].snapshot.session_id)


def _loops(entries: Sequence[SessionEntry], ids: Iterable[str]) -> bool:
    """Some top-level entry has its parent listed: :func:`session_tree` cut a loop there."""
    listed = ids if isinstance(ids, (set, frozenset)) else set(ids)
    return any(
        e.depth == 0
        and e.snapshot.parent_session is not None
        and e.snapshot.parent_session != e.snapshot.session_id
        and e.snapshot.parent_session in listed
        for e in entries
    )
