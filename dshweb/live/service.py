"""The process's hub for the shown DSH home, started on first use; or, in a web worker
(``DSHWEB["COLLECT"]`` off), the collected home it shows (:mod:`dshweb.live.worker`).

:func:`shown_home` is the home of ``DSHWEB["DSH_HOME"]`` (:mod:`dshweb.config`), or the
demo home copied on first use when that does not exist. When ``DSHWEB`` changes (a test's
``override_settings``) the hub is stopped, and the next use starts one for the home and
profile then configured. Readers call :func:`home_view`, which never folds: at most it
waits :data:`FIRST_PAGE_WAIT` seconds for the first pass of a hub that has just started.
A web worker never starts a hub: :func:`home_view` and :func:`shown_home` come from the
database, and :func:`current_hub` refuses.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from dshweb.config import get_config
from dshweb.environment import HomeChoice, home_choice
from dshweb.live import timing
from dshweb.live.hub import CheckpointStore, HomeView, Hub
from dshweb.live.worker import worker_home

_guard = threading.Lock()
_hub: Hub | None = None


def shown_home() -> HomeChoice:
    """The DSH home pages show: the configured one, or the demo home (copied now, the first
    time it is needed) when that does not exist and the demo is allowed."""
    config = get_config()
    return _home_choice(config.dsh_home, config.demo, config.data_dir)


@functools.cache
def _home_choice(configured: Path, demo: bool, data_dir: Path) -> HomeChoice:
    # Once per process (and configuration): a home made later does not replace the demo.
    return home_choice(configured, demo=demo, data_dir=data_dir)


def _store() -> CheckpointStore | None:
    if not get_config().fold_checkpoints:
        return None
    from dshweb.live.checkpoints import DatabaseCheckpoints

    return DatabaseCheckpoints()


def collecting() -> bool:
    """This process reads the DSH home itself (the embedded default), not a web worker."""
    return get_config().collect


def shown_home_name() -> str:
    """The name of the collected home a web worker shows ("" when it has none to show)."""
    return worker_home().name


def current_hub() -> Hub:
    """The running hub of the configured home (started, or replaced, as needed)."""
    global _hub
    if not collecting():
        raise RuntimeError("a web worker (DSHWEB_COLLECT=off) runs no hub")
    home, profile = shown_home().path, get_config().profile
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
    ``wait`` seconds, default :data:`~dshweb.live.timing.FIRST_PAGE_WAIT`); in a web
    worker, what the database has (never waiting)."""
    if not collecting():
        return worker_home().view
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


@receiver(setting_changed, dispatch_uid="dshweb-live-hub")
def _stop_on_change(*, setting: str, **kwargs: Any) -> None:
    if setting == "DSHWEB":
        stop_hub()
