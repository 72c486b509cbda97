"""Whether a profile assembles ``dsh-context-truth``, from what evidence, and how to add it.

Contract: :func:`context_truth_presence` reads the profile's ``package.json``, its
``node_modules`` and the profile and home patch files (never running ``dsh``); with a
composed tree, the tree alone decides presence. The :class:`Presence` it returns says
whether saving the plugin's config needs an ``- insert:`` row and, when the plugin is
absent, how a person adds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dshweb.core.errors import DshError
from dshweb.core.settings.dshconfig.composed import ComposedConfig
from dshweb.core.settings.patchfile import read_patch

CONTEXT_TRUTH_PACKAGE = "dsh-context-truth"
CONTEXT_TRUTH_ID = "context-truth"


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


def _package(home: Path, profile: str) -> dict[str, Any]:
    try:
        data = json.loads((home / "profiles" / profile / "package.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _inserts(path: Path) -> bool:
    try:
        rows = read_patch(path).rows
    except DshError:
        return False
    return any(
        isinstance(item, dict) and item.get("name") == CONTEXT_TRUTH_PACKAGE
        for row in rows
        if isinstance(row, dict) and isinstance(row.get("insert"), list)
        for item in row["insert"]
    )


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


def context_truth_presence(home: Path, profile: str, composed: ComposedConfig | None) -> Presence:
    """Whether ``profile`` in ``home`` has ``dsh-context-truth``.

    It is present when the composed tree has a row of that module, or (without a tree)
    when the profile lists it as a bundle or an insert row adds it. A dependency in
    ``package.json`` alone assembles nothing (only ``dsh.profile.bundles`` does), and a
    listed bundle that is not installed is skipped by ``dsh`` with a warning.
    """
    package = _package(home, profile)
    folder = home / "profiles" / profile
    sources: list[str] = []
    dependencies = package.get("dependencies")
    if isinstance(dependencies, dict) and CONTEXT_TRUTH_PACKAGE in dependencies:
        sources.append("package.json dependencies")
    installed = (folder / "node_modules" / CONTEXT_TRUTH_PACKAGE / "package.json").is_file()
    if installed:
        sources.append("installed in node_modules")
    dsh_section = package.get("dsh")
    bundles = dsh_section.get("profile", {}).get("bundles") if isinstance(dsh_section, dict) else []
    listed = isinstance(bundles, list) and CONTEXT_TRUTH_PACKAGE in bundles
    if listed:
        sources.append("package.json dsh.profile.bundles")
    profile_patch = folder / "cordis.patch.yml"
    inserted = False
    for path, label in (
        (profile_patch, "profile patch"),
        (home / "cordis.patch.yml", "home patch"),
    ):
        if _inserts(path):
            sources.append(f"insert row in the {label} ({path})")
            inserted = True
    row_ids: tuple[str, ...] = ()
    if composed is not None:
        row_ids = tuple(row.id for row in composed.walk() if row.name == CONTEXT_TRUTH_PACKAGE)
        sources += [f"composed row {row_id}" for row_id in row_ids]
        present = bool(row_ids)
    else:
        present = (listed and installed) or inserted
    howto = None if present else _howto(profile, profile_patch, installed)
    return Presence(present, installed, tuple(sources), row_ids, howto)
