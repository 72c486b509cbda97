"""Saving a plugin row into a profile's patch file, and restoring an earlier file.

Thin: the pure :mod:`dshweb.core.settings.patchfile` edits and writes the file (only that row's
``config``, atomically, refusing when the file changed since the form was shown); this
module records each write as a :class:`PatchRevision`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction

from dshweb.core.errors import DshError
from dshweb.core.profile.profile import CONTEXT_TRUTH_ID, CONTEXT_TRUTH_PACKAGE, Profile
from dshweb.core.profile.schema import Schema, minimal_config
from dshweb.core.settings.dshconfig import (
    ComposedConfig,
    EngineRow,
    active_engine_rows,
    find_dsh,
    preset_engine_patch,
)
from dshweb.core.settings.patchfile import (
    DEFAULT_PATCH_TEXT,
    PatchDocument,
    read_patch,
    set_row_config,
    write_patch_atomically,
)
from dshweb.live.service import own_home_name
from dshweb.profiles.composed import composed_config
from dshweb.profiles.models import PatchRevision

INSERTED_PLUGINS = {CONTEXT_TRUTH_ID: CONTEXT_TRUTH_PACKAGE}
"""Rows no bundle assembles: saving one into a profile that lacks it inserts it."""


def _user(user: AbstractBaseUser | AnonymousUser) -> User | None:
    return user if isinstance(user, User) else None


def save_row(
    *,
    profile: Profile,
    schema: Schema,
    config: Mapping[str, object],
    expected_sha256: str,
    user: AbstractBaseUser | AnonymousUser,
    insert: bool = False,
) -> PatchRevision:
    """Write ``config`` (the whole desired config) as ``schema``'s row of the profile patch.

    Raises :class:`dshweb.core.settings.patchfile.PatchConflict` when the file changed since
    ``expected_sha256`` was read, and ``PatchError`` when it does not parse.
    """
    path = profile.patch_path
    document = read_patch(path, home=profile.home)
    text = set_row_config(
        document.text,
        schema.plugin_id,
        minimal_config(schema, config),
        insert_name=INSERTED_PLUGINS.get(schema.plugin_id) if insert else None,
    )
    return _write_and_record(
        path,
        document,
        text,
        expected_sha256=expected_sha256,
        profile=profile.name,
        rel_path=str(path.relative_to(profile.home)),
        section=schema.plugin_id,
        user=user,
    )


def _write_and_record(
    path: Path,
    document: PatchDocument,
    text: str,
    *,
    expected_sha256: str,
    profile: str,
    rel_path: str,
    section: str,
    user: AbstractBaseUser | AnonymousUser,
    restored_from: PatchRevision | None = None,
) -> PatchRevision:
    """Write ``text`` over ``document`` (unless it changed on disk) and record the save."""
    with transaction.atomic():
        write_patch_atomically(path, text, expected_sha256=expected_sha256)
        return PatchRevision.objects.create(
            home=own_home_name(),
            profile=profile,
            path=rel_path,
            section=section,
            action=PatchRevision.Action.SAVE
            if restored_from is None
            else PatchRevision.Action.RESTORE,
            user=_user(user),
            before=document.text if document.exists else "",
            after=text,
            restored_from=restored_from,
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
    document = read_patch(path, home=home)
    text = (revision.before if which == "before" else revision.after) or DEFAULT_PATCH_TEXT
    return _write_and_record(
        path,
        document,
        text,
        expected_sha256=document.sha256,
        profile=revision.profile,
        rel_path=revision.path,
        section=revision.section,
        user=user,
        restored_from=revision,
    )


@dataclass(frozen=True, slots=True)
class EngineTargets:
    """Where a save of an engine row must go to reach the engine that runs.

    ``top``: the top-level row runs (an id patch reaches it). ``presets``: the engine
    runs inside these agent presets (a patch of each preset row reaches it). Neither,
    with ``reason``: the value would change nothing that runs, so it is not offered.
    """

    top: bool
    presets: tuple[EngineRow, ...] = ()
    composed: ComposedConfig | None = None
    reason: str | None = None

    @property
    def current(self) -> dict[str, object] | None:
        """The running engine's config (the default preset's when in presets)."""
        chosen = sorted(self.presets, key=lambda r: not r.default_preset)
        return dict(chosen[0].config) if chosen else None


def engine_targets(profile: Profile, engine: str) -> EngineTargets:
    """Ask the real ``dsh`` where ``engine`` runs in ``profile`` (DSH_FACTS §9)."""
    dsh = find_dsh()
    if dsh is None:
        if profile.web_app:
            return EngineTargets(
                top=False,
                reason=(
                    f"In the {profile.name!r} profile the top-level {engine} row is disabled: the "
                    "running engines sit inside the agent presets, which only the `dsh` program "
                    "can show, and it is not installed here. A value saved here would change "
                    "nothing, so it is not offered."
                ),
            )
        return EngineTargets(top=True)
    try:
        composed = composed_config(profile, dsh)
    except DshError as error:
        return EngineTargets(top=False, reason=f"`dsh --dump-config` failed: {error}")
    rows = [r for r in active_engine_rows(composed) if r.engine == engine]
    if any(r.preset is None and r.addressable for r in rows):
        return EngineTargets(top=True, composed=composed)
    presets = tuple(r for r in rows if r.preset is not None)
    if presets:
        return EngineTargets(top=False, presets=presets, composed=composed)
    return EngineTargets(
        top=False,
        composed=composed,
        reason=(
            f"No {engine} runs in the {profile.name!r} profile as `dsh` composes it, so a value "
            "saved here would change nothing; it is not offered."
        ),
    )


def save_preset_engines(
    *,
    profile: Profile,
    schema: Schema,
    config: Mapping[str, object],
    targets: EngineTargets,
    expected_sha256: str,
    user: AbstractBaseUser | AnonymousUser,
) -> PatchRevision:
    """Give the engine inside every preset that runs it the config ``config``.

    A patch of a preset row replaces the preset's whole config, so each row written is
    the composed preset with only the nested engine's config changed.
    """
    assert targets.composed is not None
    path = profile.patch_path
    document = read_patch(path, home=profile.home)
    text = document.text
    for target in targets.presets:
        assert target.preset is not None
        row = preset_engine_patch(
            targets.composed, target.preset, schema.plugin_id, minimal_config(schema, config)
        )
        text = set_row_config(text, row["id"], row["config"])
    presets = ", ".join(str(t.preset) for t in targets.presets)
    return _write_and_record(
        path,
        document,
        text,
        expected_sha256=expected_sha256,
        profile=profile.name,
        rel_path=str(path.relative_to(profile.home)),
        section=f"{schema.plugin_id} in {presets}",
        user=user,
    )
