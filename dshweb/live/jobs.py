"""The jobs each app adds to a process's services, and the store of its fold checkpoints,
named by dotted path and imported only when a process starts its services.

An app's ``ready()`` runs in every process Django starts (``dshweb doctor``, ``migrate``,
``createsuperuser`` …), where no hub runs: naming its jobs here, not importing them,
keeps those commands from importing the hub, the engine's client and the alert watcher
(about 0.2 s of CPU each). :mod:`dshweb.live.startup` runs them; a collector too
(:mod:`dshweb.collect.collector`). Each list keeps a path once (an app made ready twice
adds it once), in the order the apps are made ready: ``INSTALLED_APPS``'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from dshweb.live.hub import CheckpointStore
    from dshweb.live.hubtask import HubTask

_beside: dict[str, None] = {}
_at_start: dict[str, None] = {}
_checkpoints: str | None = None


def beside_hub(path: str) -> None:
    """Run the job of the :class:`~dshweb.live.hubtask.HubTask` at ``path`` beside every
    home's hub: the process's own, and a collector's."""
    _beside[path] = None


def jobs_beside_hub() -> tuple[HubTask[Any], ...]:
    return tuple(import_string(path) for path in _beside)


def at_start(path: str) -> None:
    """Run the function at ``path`` (blocking; in a thread) once, when a process that
    reads its home starts its services."""
    _at_start[path] = None


def jobs_at_start() -> dict[str, Callable[[], object]]:
    """What :func:`at_start` lists, by path."""
    return {path: import_string(path) for path in _at_start}


def keep_checkpoints_in(path: str) -> None:
    """A new hub keeps its fold checkpoints in the store the class at ``path`` makes (the
    collect app names its database's)."""
    global _checkpoints
    _checkpoints = path


def checkpoint_store() -> Callable[[], CheckpointStore] | None:
    """What makes the store :func:`keep_checkpoints_in` named; ``None``: none was."""
    return None if _checkpoints is None else import_string(_checkpoints)
