"""The sessions list's tree kept up to date by what changed equals the tree laid out from
nothing, whatever changes: activity, parents that come, go, loop or point at themselves."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from dshweb.core.fold.gauge import Band, ContextGauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.listing.pages import SessionList
from dshweb.core.listing.query import ListQuery
from dshweb.core.listing.tree import BANDS, HomeTree, SessionEntry, Tally, session_tree
from tests.support.snapshots import session_snapshot

IDS = [f"s{i}" for i in range(40)]
PARENTS = [None, None, None, "gone", *IDS]
"""Mostly top-level sessions; a parent that is missing, listed, or the session itself."""


@dataclass(frozen=True)
class View:
    snapshot: SessionSnapshot
    gauge: ContextGauge


def _gauge(percent: int) -> ContextGauge:
    band = BANDS[percent % len(BANDS)]
    return ContextGauge(percent * 10, 1000, percent, 800, 800 - percent * 10, band)


def sessions_st(most: int) -> st.SearchStrategy[dict[str, tuple[int, str | None, int, bool]]]:
    """Sessions: id → (last activity, parent, percent, live)."""
    figures = st.tuples(
        st.integers(0, 50), st.sampled_from(PARENTS), st.integers(0, 99), st.booleans()
    )
    return st.dictionaries(st.sampled_from(IDS), figures, max_size=most)


def _views(home: dict[str, tuple[int, str | None, int, bool]]) -> dict[str, View]:
    return {
        sid: View(session_snapshot(sid, last, parent=parent, live=live), _gauge(percent))
        for sid, (last, parent, percent, live) in home.items()
    }


def _from_nothing(views: dict[str, View]) -> list[SessionEntry]:
    return session_tree(
        [v.snapshot for v in views.values()], lambda s: views[s.session_id].gauge, "h"
    )


@settings(max_examples=300, deadline=None)
@given(first=sessions_st(len(IDS)), steps=st.lists(sessions_st(4), min_size=1, max_size=8))
def test_an_updated_tree_equals_the_tree_laid_out_from_nothing(
    first: dict[str, tuple[int, str | None, int, bool]],
    steps: list[dict[str, tuple[int, str | None, int, bool]]],
) -> None:
    views = _views(first)
    tree = HomeTree.build(
        [v.snapshot for v in views.values()], lambda s: views[s.session_id].gauge, "h"
    )
    for step in steps:
        # Each step's sessions change (or arrive); every other one stays, or goes when the
        # step names it with activity 0.
        new = dict(views)
        for sid, view in _views(step).items():
            if view.snapshot.last_time == 0:
                new.pop(sid, None)
            else:
                new[sid] = view
        touched = {sid for sid in views.keys() | new.keys() if views.get(sid) is not new.get(sid)}
        views = new
        tree = tree.updated(views, touched)
        expected = _from_nothing(views)
        assert list(tree.entries) == expected
        assert tree.tally == Tally().plus(expected)
        assert len(tree) == len(views)
        listing = SessionList(trees=[tree])
        whole = SessionList(expected, ("h",))
        for query in (ListQuery(per_page=3), ListQuery(page=2, per_page=2), ListQuery()):
            assert listing.page(query) == whole.page(query)


def test_a_change_lays_out_only_the_groups_it_touches() -> None:
    """A busy session moves to the top; the tree of the untouched groups is reused, not
    laid out again (their entries are the very same objects)."""
    views = {
        sid: View(session_snapshot(sid, last, parent=parent), _gauge(10))
        for sid, last, parent in [
            ("a", 10, None),
            ("a-sub", 12, "a"),
            ("b", 20, None),
            ("c", 30, None),
            ("d", 40, None),
            ("lost", 5, "x"),
        ]
    }
    tree = HomeTree.build(
        [v.snapshot for v in views.values()], lambda s: views[s.session_id].gauge, "h"
    )
    before = {e.snapshot.session_id: e for e in tree.entries}
    views = {**views, "a-sub": View(session_snapshot("a-sub", 50, parent="a"), _gauge(93))}
    after = tree.updated(views, {"a-sub"})
    order = [e.snapshot.session_id for e in after.entries]
    assert order == ["a", "a-sub", "d", "c", "b", "lost"]
    reused = {
        e.snapshot.session_id for e in after.entries if before.get(e.snapshot.session_id) is e
    }
    assert reused == {"b", "c", "d", "lost"}
    assert after.tally.bands[BANDS.index(Band.CRITICAL)] == 1  # 93 % 5: the third band after ample
    # The parent the orphan names arrives: it moves under it.
    views = {**views, "x": View(session_snapshot("x", 1), _gauge(10))}
    arrived = after.updated(views, {"x"})
    assert [(e.snapshot.session_id, e.depth) for e in arrived.entries][-2:] == [
        ("x", 0),
        ("lost", 1),
    ]
