"""One session as folded, sealed for another process: its snapshot and its gauge.

:func:`seal_session` writes a :class:`~dshweb.core.fold.session.SessionSnapshot` and its
:class:`~dshweb.core.fold.gauge.ContextGauge` as one blob, framed and signed the way fold
checkpoints are (:func:`dshweb.core.fold.checkpoint.seal`), under a tag of its own that
names :data:`SEALED_VERSION` and the code that folded. :func:`open_session` checks the
signature before anything is decompressed or unpickled, and its unpickler builds only
plain values and the core's own dataclasses and enums, so a row someone else wrote runs
no code. A blob from other code, or one that fails any check, opens as ``None``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import io
import pickle
from typing import Any

import zstandard

from dshweb.core.fold.checkpoint import (
    ENUM_BY_NAME,
    checkpoint_tag,
    enum_member,
    seal,
    unseal,
)
from dshweb.core.fold.gauge import ContextGauge
from dshweb.core.fold.session import SessionSnapshot
from dshweb.core.log.frames import decompressor

SEALED_VERSION = 8
"""Raise it whenever what a sealed session holds changes shape."""


def sealed_tag() -> bytes:
    """The first line of every sealed session this code writes."""
    return b"dshweb-session " + checkpoint_tag(SEALED_VERSION).split(b" ", 1)[1]


def seal_session(snapshot: SessionSnapshot, gauge: ContextGauge, *, key: bytes) -> bytes:
    """``snapshot`` and ``gauge`` as one signed blob for :func:`open_session`."""
    body = zstandard.ZstdCompressor(level=3).compress(pickle.dumps((snapshot, gauge), protocol=5))
    return seal(body, key=key, tag=sealed_tag())


def open_session(blob: bytes, *, key: bytes) -> tuple[SessionSnapshot, ContextGauge] | None:
    """What :func:`seal_session` sealed, or None when the blob is not one this code
    signed with ``key``."""
    body = unseal(blob, key=key, tag=sealed_tag()) if key else None
    if not isinstance(body, bytes):
        return None
    try:
        value = _Unpickler(io.BytesIO(decompressor().decompress(body))).load()
    except Exception:  # signed but unreadable by this code: nothing to trust in it
        return None
    match value:
        case (SessionSnapshot() as snapshot, ContextGauge() as gauge):
            return snapshot, gauge
        case _:
            return None


@functools.cache
def _core_class(module: str, name: str) -> type | None:
    """A dataclass or enum of the core, or None for anything else."""
    if not module.startswith("dshweb.core."):
        return None
    found = getattr(importlib.import_module(module), name, None)
    if isinstance(found, type) and (
        dataclasses.is_dataclass(found) or issubclass(found, enum.Enum)
    ):
        return found
    return None


class _Unpickler(pickle.Unpickler):
    """Builds plain values and the core's dataclasses and enums, nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ENUM_BY_NAME:
            return enum_member
        found = _core_class(module, name)
        if found is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a sealed session")
        return found
