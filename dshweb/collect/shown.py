"""The homes a process shows: its own hub's (:mod:`dshweb.live.service`); or, in a web
worker (``DSHWEB["COLLECT"]`` off), every collected home, as the database has it
(:mod:`dshweb.collect.worker`)."""

from __future__ import annotations

from collections.abc import Mapping

from dshweb.collect.worker import worker_homes, worker_session
from dshweb.live.homes import Homes, ShownHome
from dshweb.live.hub import SessionView
from dshweb.live.service import collecting, home_view

_homes: Homes | None = None


def shown_homes(wait: float | None = None, fresh: Mapping[str, int] | None = None) -> Homes:
    """Every home this process shows now: its own hub's (waiting as :func:`home_view`
    does), or in a web worker every collected home, as the database has it (never
    waiting; ``fresh``: the versions an announcement names, see
    :func:`~dshweb.collect.worker.worker_homes`). The same value while nothing changed."""
    global _homes
    if not collecting():
        return worker_homes(fresh)
    view = home_view(wait)
    kept = _homes
    if kept is not None and kept.shown[0].view is view:
        return kept
    _homes = Homes((ShownHome(view),))
    return _homes


def shown_session(home: str, session_id: str, version: int | None = None) -> SessionView | None:
    """One session of ``home`` as shown now (None: not there). ``version``: the version of
    its home an announcement says shows its change; a web worker then reads only that
    session's row, not every row its home wrote (see
    :func:`~dshweb.collect.worker.worker_session`)."""
    if not collecting():
        return worker_session(home, session_id, version)
    return shown_homes().session(home, session_id)
