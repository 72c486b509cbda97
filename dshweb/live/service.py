"""The process's own hub, started on first use (in a web worker, ``DSHWEB["COLLECT"]``
off, there is none: :mod:`dshweb.collect.shown` gives the homes it shows).

:func:`own_home` is the home of ``DSHWEB["DSH_HOME"]`` (:mod:`dshweb.config`), or the
demo home copied on first use when that does not exist; its hub names it
``DSHWEB["HOME_NAME"]``. When ``DSHWEB`` changes (a test's ``override_settings``) the hub
is stopped, and the next use starts one for the home and profile then configured.
Readers call :func:`shown_homes`, which never folds: at most it waits
:data:`FIRST_PAGE_WAIT` seconds for the first round of a hub that has just started. A web
worker never starts a hub: :func:`shown_homes` comes from the database, and
:func:`current_hub` refuses.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from dshweb.config import get_config
from dshweb.demo.home import REPLAY_SESSION_ID
from dshweb.environment import HomeChoice, home_choice
from dshweb.live import jobs, timing
from dshweb.live.hub import CheckpointStore, HomeView, Hub

_guard = threading.Lock()
_hub: Hub | None = None
_collected: tuple[str, Hub] | None = None
"""In a collector: the home it collects and its hub, this process's own home."""


def collect_here(name: str, hub: Hub) -> None:
    """Make ``hub`` (a collector's, of home ``name``) this process's own home: what a
    command run here (a settings page of the home) reads and changes."""
    global _collected
    _collected = (name, hub)


def own_home_name() -> str:
    """The name of the home this process reads itself."""
    return _collected[0] if _collected is not None else get_config().home_name


def own_home() -> HomeChoice:
    """This process's own home, the DSH home it reads itself (and its pages show, unless it
    is a web worker): the configured one, or the demo home (copied now, the first time it
    is needed) when that does not exist and the demo is allowed; in a collector, the home
    it collects."""
    if _collected is not None:
        return HomeChoice(_collected[1].home, is_demo=False)
    config = get_config()
    return _home_choice(config.dsh_home, config.demo, config.data_dir)


@functools.cache
def _home_choice(configured: Path, demo: bool, data_dir: Path) -> HomeChoice:
    # Once per process (and configuration): a home made later does not replace the demo.
    return home_choice(configured, demo=demo, data_dir=data_dir)


def demo_replays(home: str, session_id: str) -> bool:
    """The demo's replay writes this session (of the home named ``home``): this process
    reads the demo home itself, and the session is the one it replays, looping."""
    return (
        session_id == REPLAY_SESSION_ID
        and collecting()
        and home == own_home_name()
        and own_home().is_demo
    )


def _store() -> CheckpointStore | None:
    """The store a new hub keeps its fold checkpoints in (the collect app names its
    database's: :func:`~dshweb.live.jobs.keep_checkpoints_in`); ``None``, or
    ``FOLD_CHECKPOINTS`` off: none."""
    make = jobs.checkpoint_store()
    if not get_config().fold_checkpoints or make is None:
        return None
    return make()


def collecting() -> bool:
    """This process reads the DSH home itself (the embedded default), not a web worker."""
    return get_config().collect


def current_hub() -> Hub:
    """The running hub of the configured home (started, or replaced, as needed)."""
    global _hub
    if _collected is not None:
        return _collected[1]
    if not collecting():
        raise RuntimeError("a web worker (DSHWEB_COLLECT=off) runs no hub")
    config = get_config()
    home, profile, name = own_home().path, config.profile, config.home_name
    hub = _hub
    if hub is not None and (hub.home, hub.profile, hub.name) == (home, profile, name):
        return hub
    with _guard:
        old = _hub
        if old is not None and (old.home, old.profile, old.name) == (home, profile, name):
            return old
        _hub = Hub(home, profile, store=_store(), name=name, cores=config.fold_processes or None)
        _hub.start()
    if old is not None:
        old.stop()
    return _hub


def running_hub() -> Hub | None:
    """The hub this process runs now, if any (never starts one)."""
    return _collected[1] if _collected is not None else _hub


def home_view(wait: float | None = None) -> HomeView:
    """What this process's own hub holds now (waiting for a first round still under way,
    at most ``wait`` seconds, default :data:`~dshweb.live.timing.FIRST_PAGE_WAIT`)."""
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
