"""The process's hub for the configured DSH home, started on first use.

``settings.DSH_HOME`` / ``settings.DSH_PROFILE`` name the home; when either changes (a
test, a settings change) the old hub is stopped and a new one started. Readers call
:func:`home_view`, which never folds: at most it waits :data:`FIRST_PAGE_WAIT` seconds
for the first pass of a hub that has just started.
"""

from __future__ import annotations

import threading
from pathlib import Path

from django.conf import settings

from dshweb.live import timing
from dshweb.live.hub import CheckpointStore, HomeView, Hub

_guard = threading.Lock()
_hub: Hub | None = None


def _store() -> CheckpointStore | None:
    if not settings.DSHWEB_FOLD_CHECKPOINTS:
        return None
    from dshweb.live.checkpoints import DatabaseCheckpoints

    return DatabaseCheckpoints()


def current_hub() -> Hub:
    """The running hub of the configured home (started, or replaced, as needed)."""
    global _hub
    home, profile = Path(settings.DSH_HOME), str(settings.DSH_PROFILE)
    hub = _hub
    if hub is not None and hub.home == home and hub.profile == profile:
        return hub
    with _guard:
        old = _hub
        if old is not None and old.home == home and old.profile == profile:
            return old
        _hub = Hub(home, profile, store=_store())
        _hub.start()
    if old is not None:
        old.stop()
    return _hub


def home_view(wait: float | None = None) -> HomeView:
    """What the hub holds now (waiting for a first pass still under way, at most
    ``wait`` seconds, default :data:`~dshweb.live.timing.FIRST_PAGE_WAIT`)."""
    return current_hub().wait_ready(timing.FIRST_PAGE_WAIT if wait is None else wait)


def sync_home(changed: list[Path] | None = None) -> HomeView:
    """Fold what changed now, without waiting for a notification (tests, the CLI)."""
    hub = current_hub()
    hub.wait_ready(60)
    return hub.sync(changed)


def stop_hub() -> None:
    """Stop the process's hub (tests, shutdown); the next use starts a new one."""
    global _hub
    with _guard:
        hub, _hub = _hub, None
    if hub is not None:
        hub.stop()
