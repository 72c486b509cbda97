"""Fold checkpoints in the database: each session's fold state, so a restart costs only
the bytes written since (:mod:`dshweb.core.fold.checkpoint` makes and checks the blobs).

Blobs are signed with a key derived from ``SECRET_KEY`` and refused unless the log is
still the one folded (same file, not truncated, not rewritten) and the blob comes from
this dshweb version; a refused checkpoint is deleted and its session folded afresh.
Folder names are stored as :func:`stored_path` writes them: a name the file system
allows but UTF-8 does not (PostgreSQL's text refuses it) reads back byte for byte.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from dshweb.collect.models import FoldCheckpoint
from dshweb.core.fold.checkpoint import dump_checkpoint, load_checkpoint
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import LogFile

log = logging.getLogger(__name__)
_UNDECODED = re.compile("[\udc80-\udcff]")


def _key() -> bytes:
    return hashlib.sha256(b"dshweb.fold-checkpoint\0" + settings.SECRET_KEY.encode()).digest()


def stored_path(path: str) -> str:
    """``path`` as a text column holds it: each byte that is not UTF-8 (Python keeps it as a
    lone surrogate) as ``%XX``, and ``%`` as ``%25``; :func:`path_stored` reverses it."""
    if "%" not in path and (path.isascii() or not _UNDECODED.search(path)):
        return path
    return "".join(
        "%25" if c == "%" else f"%{ord(c) - 0xDC00:02X}" if "\udc80" <= c <= "\udcff" else c
        for c in path
    )


def path_stored(column: str) -> str:
    return os.fsdecode(unquote_to_bytes(column)) if "%" in column else column


def _relative(home: Path, folder: Path) -> str:
    return stored_path(_relative_text(home, folder))


def _relative_text(home: Path, folder: Path) -> str:
    try:
        return str(folder.relative_to(home))
    except ValueError:
        return str(folder)


class DatabaseCheckpoints:
    """The hub's :class:`~dshweb.live.hub.CheckpointStore` on Django's database."""

    def restore(
        self, home: Path, logs: Mapping[Path, LogFile]
    ) -> Iterator[tuple[Path, SessionTracker, bytes]]:
        key = _key()
        refused: list[str] = []
        close_old_connections()
        try:
            rows = FoldCheckpoint.objects.filter(home=stored_path(str(home)))
            for folder_name, stored in rows.values_list("folder", "blob").iterator(chunk_size=500):
                folder = home / path_stored(folder_name)
                current = logs.get(folder)
                blob = bytes(stored)
                tracker = load_checkpoint(current, blob, key=key) if current is not None else None
                if tracker is None:
                    refused.append(folder_name)
                else:
                    yield folder, tracker, blob
            if refused:
                FoldCheckpoint.objects.filter(
                    home=stored_path(str(home)), folder__in=refused
                ).delete()
        finally:
            close_old_connections()
        if refused:
            log.info("%d fold checkpoint(s) of %s no longer match their logs", len(refused), home)

    @property
    def key(self) -> bytes:
        return _key()

    def encode(self, tracker: SessionTracker) -> bytes:
        return dump_checkpoint(tracker, key=_key())

    def decode(self, log: LogFile, blob: bytes) -> SessionTracker | None:
        return load_checkpoint(log, blob, key=_key())

    def save(self, home: Path, blobs: Mapping[Path, bytes]) -> None:
        if not blobs:
            return
        now = timezone.now()
        rows = [
            FoldCheckpoint(
                home=stored_path(str(home)),
                folder=_relative(home, folder),
                blob=blob,
                saved_at=now,
            )
            for folder, blob in blobs.items()
        ]
        close_old_connections()
        try:
            with transaction.atomic():
                FoldCheckpoint.objects.bulk_create(
                    rows,
                    batch_size=500,
                    update_conflicts=True,
                    unique_fields=["home", "folder"],
                    update_fields=["blob", "saved_at"],
                )
        finally:
            close_old_connections()

    def forget(self, home: Path, folders: Iterable[Path]) -> None:
        names = [_relative(home, folder) for folder in folders]
        close_old_connections()
        try:
            FoldCheckpoint.objects.filter(home=stored_path(str(home)), folder__in=names).delete()
        finally:
            close_old_connections()
