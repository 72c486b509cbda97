"""Saving a plugin row into a profile's patch file, and restoring an earlier file.

Thin: the pure :mod:`dshweb.core.patchfile` edits and writes the file (only that row's
``config``, atomically, refusing when the file changed since the form was shown); this
module records each write as a :class:`PatchRevision`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction

from dshweb.core.patchfile import (
    DEFAULT_PATCH_TEXT,
    read_patch,
    set_row_config,
    write_patch_atomically,
)
from dshweb.core.truth_settings import Schema, minimal_config
from dshweb.dashboard.models import PatchRevision

PATCH_NAME = "cordis.patch.yml"
INSERTED_PLUGINS = {"context-truth": "dsh-context-truth"}
"""Rows no bundle assembles: saving one into a profile that lacks it inserts it."""


def profile_names(home: Path) -> list[str]:
    """Every profile folder of the home."""
    folder = home / "profiles"
    try:
        return sorted(p.name for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def patch_path(home: Path, profile: str) -> Path:
    return home / "profiles" / profile / PATCH_NAME


def _user(user: AbstractBaseUser | AnonymousUser) -> User | None:
    return user if isinstance(user, User) else None


def save_row(
    *,
    home: Path,
    profile: str,
    schema: Schema,
    config: Mapping[str, object],
    expected_sha256: str,
    user: AbstractBaseUser | AnonymousUser,
    insert: bool = False,
) -> PatchRevision:
    """Write ``config`` (the whole desired config) as ``schema``'s row of the profile patch.

    Raises :class:`dshweb.core.patchfile.PatchConflict` when the file changed since
    ``expected_sha256`` was read, and ``PatchError`` when it does not parse.
    """
    path = patch_path(home, profile)
    document = read_patch(path)
    text = set_row_config(
        document.text,
        schema.plugin_id,
        minimal_config(schema, config),
        insert_name=INSERTED_PLUGINS.get(schema.plugin_id) if insert else None,
    )
    with transaction.atomic():
        write_patch_atomically(path, text, expected_sha256=expected_sha256)
        return PatchRevision.objects.create(
            profile=profile,
            path=str(path.relative_to(home)),
            section=schema.plugin_id,
            user=_user(user),
            before=document.text if document.exists else "",
            after=text,
        )


def restore(
    *,
    home: Path,
    revision: PatchRevision,
    which: str,
    user: AbstractBaseUser | AnonymousUser,
) -> PatchRevision:
    """Put back the file as it was before or after ``revision``; recorded as a revision."""
    path = home / revision.path
    document = read_patch(path)
    text = (revision.before if which == "before" else revision.after) or DEFAULT_PATCH_TEXT
    with transaction.atomic():
        write_patch_atomically(path, text, expected_sha256=document.sha256)
        return PatchRevision.objects.create(
            profile=revision.profile,
            path=revision.path,
            section=revision.section,
            action=PatchRevision.Action.RESTORE,
            user=_user(user),
            before=document.text if document.exists else "",
            after=text,
            restored_from=revision,
        )
