"""Each shown home's counters for ``/metrics``, kept as its views change.

A scrape costs what changed since the last one, not the home's size: a home whose view
is the one seen last is not walked at all; a new view is walked by identity (a
session's :class:`~dshweb.live.hub.SessionView` is the same object while it has not
changed), and only a session whose view is new is counted again, from what the hub
already keeps in its snapshot (the ledger's tally, the cost's tokens by billing slot),
never by folding.

Counters never go down while the process runs, as Prometheus expects of a counter (a
drop reads as a restart, and a rate over it as the whole count again): each session
counts at its highest (a usage sample DSH replaces with a smaller one, a retried
request's, does not lower it), a session that goes keeps its counts in its home's, and
a home that cannot be read for a moment keeps them until it can be read again. A
session that comes back (its folder unreadable for a moment) is not counted twice: the
highs of the last :data:`GONE_KEPT` sessions gone are kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dshweb.core.fold.compactions import CompactionKind
from dshweb.core.fold.cost import RateBook
from dshweb.core.fold.meter import BUCKET_KEYS
from dshweb.core.lru import LRU
from dshweb.live.hub import HomeView, SessionView

KINDS: tuple[CompactionKind, ...] = ("automatic", "manual", "overflow", "prune")

Key = tuple[str, ...]
"""A counter and its labels past ``home``: ``("folds", kind)``, ``("failures",)``,
``("freed",)``, ``("tokens", model, kind)``, ``("summariser_tokens", model, kind)``,
``("cost", model)``."""
GONE_KEPT = 4096
"""The sessions gone from a home whose highs are kept, in case they come back."""
FAILURES: Key = ("failures",)
FREED: Key = ("freed",)

_keys: dict[Key, Key] = {}
"""Every key made once (a session keeps its highs under the shared key objects)."""


def _key(*parts: str) -> Key:
    return _keys.setdefault(parts, parts)


def session_counts(view: SessionView, book: RateBook) -> dict[Key, float]:
    """One session's counts now (what is 0 left out)."""
    snapshot = view.snapshot
    tally = snapshot.ledger.tally()
    counts: dict[Key, float] = {_key("folds", kind): n for kind, n in tally.done if n}
    if tally.failed:
        counts[FAILURES] = tally.failed
    if tally.freed:
        counts[FREED] = tally.freed
    for row in book.by_route(snapshot.cost):
        model = row.rates.route[0]
        for name, tokens in (("tokens", row.tokens), ("summariser_tokens", row.summary_tokens)):
            for kind, n in zip(BUCKET_KEYS, tokens, strict=True):
                if n:
                    key = _key(name, model, kind)
                    counts[key] = counts.get(key, 0) + n
        if row.dollars is not None:  # a model without rates has no cost series, not 0
            key = _key("cost", model)
            counts[key] = counts.get(key, 0.0) + row.dollars
    return counts


@dataclass(slots=True)
class _Kept:
    view: SessionView
    highs: dict[Key, float]
    error: bool


@dataclass(slots=True)
class HomeTally:
    """One home's sums, following its views (not thread-safe: the caller holds a lock)."""

    book: RateBook
    view: HomeView | None = None
    sums: dict[Key, float] = field(default_factory=dict)
    errors: int = 0
    """Sessions of the last view whose log has a reader error."""
    watched: tuple[SessionView, ...] = ()
    """The sessions that were live or recently active at the last walk, for
    :meth:`shown_sessions` (no session becomes recent without a new view)."""
    _kept: dict[str, _Kept] = field(default_factory=dict)
    _gone: LRU[str, dict[Key, float]] = field(default_factory=lambda: LRU(GONE_KEPT))

    def follow(self, view: HomeView, recent_since: int) -> None:
        """Take ``view`` in: count the sessions whose view is new, forget those gone."""
        if view is self.view:
            return
        self.view = view
        if view.error is not None:  # keep every count until the home can be read again
            self.watched = ()
            return
        kept = self._kept
        watched = []
        for session_id, session in view.sessions.items():
            held = kept.get(session_id)
            if held is None or held.view is not session:
                self._count(session_id, session, held)
            shot = session.snapshot
            if shot.live or (shot.last_time or 0) >= recent_since:
                watched.append(session)
        self.watched = tuple(watched)
        if len(kept) != len(view.sessions):  # some went (their counts stay in the sums)
            for gone in kept.keys() - view.sessions.keys():
                held = kept.pop(gone)
                self.errors -= held.error
                self._gone.put(gone, held.highs)

    def _count(self, session_id: str, session: SessionView, held: _Kept | None) -> None:
        highs = held.highs if held is not None else self._gone.pop(session_id) or {}
        sums = self.sums
        for key, value in session_counts(session, self.book).items():
            before = highs.get(key, 0)
            if value > before:
                sums[key] = sums.get(key, 0) + (value - before)
                highs[key] = value
            else:
                sums.setdefault(key, 0)
        error = bool(session.snapshot.errors)
        self.errors += error - (held.error if held is not None else False)
        self._kept[session_id] = _Kept(session, highs, error)

    def sums_of(self, name: str) -> Iterable[tuple[Key, float]]:
        """The sums of counter ``name``, by their labels, in a stable order."""
        return sorted((key[1:], value) for key, value in self.sums.items() if key[0] == name)

    def shown_sessions(self, recent_since: int, most_recent: int) -> list[SessionView]:
        """The sessions with series of their own: every live one, and of those active
        since ``recent_since`` the ``most_recent`` newest."""
        live, recent = [], []
        for session in self.watched:
            shot = session.snapshot
            if shot.live:
                live.append(session)
            elif (shot.last_time or 0) >= recent_since:
                recent.append(session)
        recent.sort(key=lambda s: (-(s.snapshot.last_time or 0), s.snapshot.session_id))
        return live + recent[:most_recent]


@dataclass(slots=True)
class Tallies:
    """Every shown home's :class:`HomeTally`, by name (a home no longer shown is dropped;
    another rate book, a setting changed, starts every count again)."""

    book: RateBook | None = None
    homes: dict[str, HomeTally] = field(default_factory=dict)

    def follow(
        self, views: Mapping[str, HomeView], book: RateBook, recent_since: int
    ) -> list[tuple[HomeView, HomeTally]]:
        """Each home's view and its tally, having taken the view in."""
        if book != self.book:
            self.book, self.homes = book, {}
        for gone in self.homes.keys() - views.keys():
            del self.homes[gone]
        followed = []
        for name, view in views.items():
            tally = self.homes.get(name)
            if tally is None:
                tally = self.homes[name] = HomeTally(book)
            tally.follow(view, recent_since)
            followed.append((view, tally))
        return followed
