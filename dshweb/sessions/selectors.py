"""The session, or why not: one answer for the pages, the downloads and the JSON API.

:func:`find_session` gives the session of a home as shown now (with its home and how far
the first read of the homes has got), or :class:`NotShown`: the home cannot be read
(503, with the reason), the session is not there once its home has been read through
(404), or the read has not got that far yet (503: it may yet appear). Each caller says it
in its own way: a page, a JSON ``{"detail"}``. :func:`spend_of` gives what the homes
spent, for the cost page and its API call alike.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.utils import timezone

from dshweb.collect.shown import shown_homes
from dshweb.config import get_config
from dshweb.core.fold.progress import FoldProgress
from dshweb.core.listing.spend import SpendReport, spend_report
from dshweb.live.homes import Homes, ShownHome
from dshweb.live.hub import SessionView

HOME_UNAVAILABLE = 503


@dataclass(frozen=True, slots=True)
class Found:
    shown: ShownHome
    view: SessionView
    progress: FoldProgress


@dataclass(frozen=True, slots=True)
class NotShown:
    status: int
    """404: not in its home, read through; 503: the home cannot be read, or not that far yet."""
    homes: Homes
    shown: ShownHome | None
    """The session's home, when it is shown."""
    progress: FoldProgress

    @property
    def home_error(self) -> str | None:
        """Why the homes cannot be read, if that is why."""
        return self.homes.error


def missing_session(homes: Homes, shown: ShownHome | None) -> tuple[int, FoldProgress]:
    """Why a session is not shown: 404 once its home has been read through, else 503 (it
    may yet appear); and how far the read has got."""
    progress = shown.view.progress if shown is not None else homes.progress
    return (404 if progress.done else HOME_UNAVAILABLE), progress


def find_session(home: str, session_id: str) -> Found | NotShown:
    """Session ``session_id`` of home ``home`` now, or why not."""
    homes = shown_homes()
    if homes.error is not None:
        return NotShown(HOME_UNAVAILABLE, homes, None, homes.progress)
    shown = homes.home(home)
    view = homes.session(home, session_id)
    if shown is None or view is None:
        status, progress = missing_session(homes, shown)
        return NotShown(status, homes, shown, progress)
    return Found(shown, view, homes.progress)


def now_ms() -> int:
    """The time the cost's days, weeks and burn rate are taken at (epoch ms)."""
    return int(time.time() * 1000)


def spend_of(homes: Homes) -> SpendReport:
    """What the shown homes spent (each home's sums kept by its sessions list's tree),
    priced by this server's rates, its days in the server's time zone (``TIME_ZONE``)."""
    spends = [shown.view.home_tree.spend for shown in homes.shown if shown.view.error is None]
    zone = timezone.get_default_timezone()
    return spend_report(spends, get_config().rate_book, zone, now_ms())
