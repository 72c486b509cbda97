"""Whether a profile assembles ``dsh-context-truth``, from what evidence, and how to add it.

Contract: :func:`context_truth_presence` reads the profile's patch layers and takes
what its ``package.json`` and ``node_modules`` say from its
:class:`~dshweb.core.profile.profile.Profile` (never running ``dsh``); with a composed
tree, the tree alone decides presence. The :class:`Presence` it returns says whether
saving the plugin's config needs an ``- insert:`` row and, when the plugin is absent,
how a person adds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dshweb.core.errors import DshError
from dshweb.core.profile.profile import CONTEXT_TRUTH_ID, CONTEXT_TRUTH_PACKAGE, Layer, Profile
from dshweb.core.settings.dshconfig.composed import ComposedConfig
from dshweb.core.settings.patchfile import read_layer


@dataclass(frozen=True, slots=True)
class Presence:
    """Whether a profile assembles ``dsh-context-truth``, and how it is known.

    ``sources`` say where it was found; ``row_ids`` are the composed rows' ids (when a
    composed tree was given); ``installed``: its package is in the profile's
    ``node_modules`` (without it a row still composes, but the plugin fails to import
    and the rest of the profile runs on); ``howto`` tells how to add it when absent.
    """

    present: bool
    installed: bool
    sources: tuple[str, ...]
    row_ids: tuple[str, ...]
    howto: str | None

    @property
    def needs_insert(self) -> bool:
        """Saving its config needs an ``- insert:`` row (nothing assembles it yet);
        otherwise a ``- id:`` row overrides the config of the row that exists."""
        return not self.present


def _inserts(layer: Layer) -> bool:
    try:
        inserted = read_layer(layer).inserted_rows()
    except DshError:
        return False
    return any(row.is_context_truth for row in inserted)


def _howto(profile: str, profile_patch: Path, installed: bool) -> str:
    insert = f"- insert:\n    - id: {CONTEXT_TRUTH_ID}\n      name: {CONTEXT_TRUTH_PACKAGE}"
    if installed:
        return (
            f"Its package is installed but nothing assembles it. List it in package.json "
            f"dsh.profile.bundles (its bundle patch inserts the row), or save its settings "
            f"here to add this insert row to {profile_patch}:\n{insert}"
        )
    return (
        f"Install it with `dsh plugin --profile {profile} add {CONTEXT_TRUTH_PACKAGE}` "
        f"(needs pnpm; the package is not on the npm registry, so use "
        f"`dsh plugin --profile {profile} add github:deepseekv41flash/{CONTEXT_TRUTH_PACKAGE}`): "
        f"that lists it as a bundle, whose patch inserts the row. An insert row in "
        f"{profile_patch} composes too, but the plugin only loads once its package is "
        f"installed:\n{insert}"
    )


def context_truth_presence(profile: Profile, composed: ComposedConfig | None) -> Presence:
    """Whether ``profile`` has ``dsh-context-truth``.

    It is present when the composed tree has a row of that module, or (without a tree)
    when the profile lists it as a bundle or an insert row adds it. A dependency in
    ``package.json`` alone assembles nothing (only ``dsh.profile.bundles`` does), and a
    listed bundle that is not installed is skipped by ``dsh`` with a warning.
    """
    plugin = profile.context_truth
    sources: list[str] = []
    if plugin.dependency:
        sources.append("package.json dependencies")
    if plugin.installed:
        sources.append("installed in node_modules")
    if plugin.bundle:
        sources.append("package.json dsh.profile.bundles")
    inserted = False
    for layer in profile.layers:
        if _inserts(layer):
            sources.append(f"insert row in the {layer.label} ({layer.path})")
            inserted = True
    row_ids: tuple[str, ...] = ()
    if composed is not None:
        row_ids = tuple(row.id for row in composed.walk() if row.name == CONTEXT_TRUTH_PACKAGE)
        sources += [f"composed row {row_id}" for row_id in row_ids]
        present = bool(row_ids)
    else:
        present = (plugin.bundle and plugin.installed) or inserted
    howto = None if present else _howto(profile.name, profile.patch_path, plugin.installed)
    return Presence(present, plugin.installed, tuple(sources), row_ids, howto)
