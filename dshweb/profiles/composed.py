"""A profile as the real ``dsh`` composes it (``dsh --dump-config``), run again only when
what it reads changed: the ``dsh`` program, or a file of the profile's folder (its patch
files). A settings page asks for it on every GET; the answer of the last run is kept,
a failure too (said again, not run again, until a file changes)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from dshweb.core.errors import DshError
from dshweb.core.lru import LRU
from dshweb.core.profile.profile import Profile, profile_folder
from dshweb.core.settings.dshconfig import ComposedConfig, dump_config

KEPT = 32
"""Profiles whose composition is kept (a home has a handful)."""

Stamp = tuple[tuple[str, int, int, int], ...]

_kept: LRU[tuple[Path, str, Path], tuple[Stamp, ComposedConfig | DshError]] = LRU(KEPT)


def _stamp(dsh: Path, folder: Path) -> Stamp:
    """What ``dsh --dump-config`` reads, as (name, size, mtime, inode) of each file: the
    program, and every entry of the profile's folder (a folder by its own stamp)."""
    paths = [dsh]
    with contextlib.suppress(OSError):  # no folder: dump_config says so
        paths += sorted(folder.iterdir())
    stamp = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        stamp.append((str(path), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(stamp)


def composed_config(profile: Profile, dsh: Path) -> ComposedConfig:
    """``dsh --dump-config`` of ``profile``: run now, or kept from a run that read the same
    files; raises its :class:`~dshweb.core.errors.DshError` alike."""
    key = (profile.home, profile.name, dsh)
    stamp = _stamp(dsh, profile_folder(profile.home, profile.name))

    def run() -> tuple[Stamp, ComposedConfig | DshError]:
        try:
            return stamp, dump_config(profile.home, profile.name, dsh=dsh)
        except DshError as error:
            return stamp, error

    found = _kept.get_or_make(key, run, lambda kept: kept[0] == stamp)[1]
    if isinstance(found, DshError):
        raise found
    return found
