"""What pages read: the hub's view of the DSH home (:mod:`dshweb.live.service`).

Reading never folds; the hub does, in its own thread. ``HomeReading`` is the hub's
:class:`~dshweb.live.hub.HomeView`.
"""

from __future__ import annotations

from dshweb.live.hub import HomeView
from dshweb.live.service import home_view, stop_hub

HomeReading = HomeView


def home_reading() -> HomeView:
    """Every session of the home as the hub last folded it."""
    return home_view()


def reset_home_index() -> None:
    """Stop the hub (tests, or a changed home); the next read starts a new one."""
    stop_hub()
