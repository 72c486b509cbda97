"""Profile patch layers as far as they set the compaction engine and the tool-result
pruner (DSH_FACTS §9).

Every layer is read the one way DSH reads it (:mod:`dshweb.core.profile.dshyaml`); a layer DSH
would refuse raises its :class:`~dshweb.core.profile.patch.PatchError` (file, reason,
line and column).

Layers, in order: :attr:`~dshweb.core.profile.profile.Profile.layers` (each bundle's patch
is inside the ``dsh`` executable, so unseen here). A row's ``config`` replaces the whole
config. Profiles built on the web-app bundle disable the top-level ``compaction-basic``
row and run the engine from their agent presets with its defaults, out of reach of an id
patch, so a patch there changes nothing that runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dshweb.core.profile.patch import PatchError, read_layer, read_patch
from dshweb.core.profile.profile import Layer, Profile, patch_layers

ENGINE_ID = "compaction-basic"
PRUNER_ID = "tool-result-pruner"
PRESET_ROW = "preset-"
"""Agent preset rows are ``preset-<name>``; the name is the row config's ``id``."""
DEFAULT_PRESET = "standard"


def load_patch(path: Path) -> list[Any]:
    """The rows of one patch file, read as DSH reads them ([] when it does not exist)."""
    return list(read_patch(path).rows)


def layer_rows(layer: Layer) -> list[Any]:
    """The rows of one patch layer (:func:`~dshweb.core.profile.patch.read_layer`)."""
    return list(read_layer(layer).rows)


def read_profile(home: Path, profile: str, extra_patches: Sequence[Path] = ()) -> Profile:
    """:meth:`Profile.read`, raising :class:`PatchError` when its ``package.json`` (what
    assembles it, so which engine runs) could not be read."""
    read = Profile.read(home, profile, extra_patches)
    if read.package_refused is not None:
        raise PatchError(read.package_refused)
    return read


def _rows_with_id(rows: list[Any], row_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        if row.get("id") == row_id:
            found.append(row)
        inserted = row.get("insert")
        if isinstance(inserted, list):
            found.extend(_rows_with_id(inserted, row_id))
    return found


def layered_config(
    home: Path, profile: str, row_id: str, extra_patches: Sequence[Path] = ()
) -> dict[str, Any] | None:
    """The ``config`` the visible patch layers give ``row_id`` (the last one wins, whole).

    ``extra_patches`` are applied last, like ``dsh --patch``. ``None``: no visible layer
    sets it.
    """
    return _layered(patch_layers(home, profile, extra_patches), row_id)


def _layered(layers: Sequence[Layer], row_id: str) -> dict[str, Any] | None:
    config: dict[str, Any] | None = None
    for layer in layers:
        for row in _rows_with_id(layer_rows(layer), row_id):
            if isinstance(row.get("config"), dict):
                config = row["config"]
    return config


def engine_config(
    home: Path, profile: str, extra_patches: Sequence[Path] = ()
) -> dict[str, Any] | None:
    """The ``config`` the running ``compaction-basic`` gets from the visible patch layers.

    ``None`` means no visible layer sets it (the engine runs on its defaults). A profile
    on the web-app bundle runs its engines inside the agent presets: there only a patch
    of a preset row reaches them (the settings pages write one for each preset), and
    the default preset's (``preset-standard``) engine config is the one shown.
    """
    read = read_profile(home, profile, extra_patches)
    if not read.web_app:
        return _layered(read.layers, ENGINE_ID)
    found = _preset_configs(read.layers)
    return found.get(DEFAULT_PRESET, next(iter(found.values()), None))


def preset_engine_configs(
    home: Path, profile: str, extra_patches: Sequence[Path] = ()
) -> dict[str, dict[str, Any] | None] | None:
    """Each agent preset a visible layer of a web-app profile patches, by its name (the
    ``agentPreset`` a session's log records): the ``config`` its nested
    ``compaction-basic`` gets (``None``: none, the engine's defaults). A preset no visible
    layer patches runs the engine on its defaults too. ``None`` for a profile whose
    engine is a top-level row."""
    read = read_profile(home, profile, extra_patches)
    return _preset_configs(read.layers) if read.web_app else None


def _preset_configs(layers: Sequence[Layer]) -> dict[str, dict[str, Any] | None]:
    return {name: _config_of(row) for name, row in _preset_rows(layers, ENGINE_ID).items()}


def _preset_rows(layers: Sequence[Layer], row_id: str) -> dict[str, dict[str, Any] | None]:
    """Each agent preset a visible layer patches, by name: its nested row ``row_id``
    (``None``: the preset's patch has none)."""
    found: dict[str, dict[str, Any] | None] = {}
    for layer in layers:
        for row in layer_rows(layer):
            preset_row = row.get("id") if isinstance(row, dict) else None
            config = row.get("config") if isinstance(row, dict) else None
            if (
                isinstance(preset_row, str)
                and preset_row.startswith(PRESET_ROW)
                and isinstance(config, dict)
            ):
                name = config.get("id")
                name = name if isinstance(name, str) else preset_row.removeprefix(PRESET_ROW)
                found[name] = _nested_row(config.get("plugins"), row_id)
    return found


def _config_of(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    config = row.get("config")
    return config if isinstance(config, dict) else {}


def _nested_row(entries: Any, row_id: str) -> dict[str, Any] | None:
    """Row ``row_id`` inside a preset's ``plugins`` (groups included)."""
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("id") == row_id:
            return entry
        nested = _nested_row(entry.get("config"), row_id)
        if nested is not None:
            return nested
    return None


def _runs(row: dict[str, Any] | None) -> bool:
    return row is None or row.get("disabled") is not True


STOCK_PRESETS_WITHOUT_PRUNER = frozenset({"minimal"})
"""The web-app bundle's agent presets whose ``compaction`` group has no
``tool-result-pruner`` (``dsh --profile web --dump-config`` of 0.2.1-rc.2:
tests/fixtures/patches/web-dump-config.txt; the others run it on its defaults)."""


def _preset_pruner(patched: dict[str, dict[str, Any] | None], preset: str) -> dict[str, Any] | None:
    """The config ``preset``'s pruner gets (``None``: it has none, or it is disabled).

    A patch of the preset row replaces its whole config, so a patched preset runs the
    pruner only if the patch lists it; an unpatched one runs the bundle's."""
    if preset not in patched:
        return None if preset in STOCK_PRESETS_WITHOUT_PRUNER else {}
    row = patched[preset]
    return _config_of(row) if row is not None and _runs(row) else None


def pruner_config(
    home: Path, profile: str, extra_patches: Sequence[Path] = ()
) -> dict[str, Any] | None:
    """The ``config`` the running tool-result pruner gets from the visible patch layers
    (``{}``: none sets one, the pruner's defaults); ``None``: it does not run, a visible
    layer disables its row (on a web-app profile: the default preset has none)."""
    read = read_profile(home, profile, extra_patches)
    if read.web_app:
        return _preset_pruner(_preset_rows(read.layers, PRUNER_ID), DEFAULT_PRESET)
    rows = [
        row
        for layer in read.layers
        for row in _rows_with_id(layer_rows(layer), PRUNER_ID)
        if "disabled" in row
    ]
    if not _runs(rows[-1] if rows else None):
        return None
    return _layered(read.layers, PRUNER_ID) or {}


def preset_pruner_configs(
    home: Path, profile: str, extra_patches: Sequence[Path] = ()
) -> dict[str, dict[str, Any] | None] | None:
    """The ``config`` the tool-result pruner gets in each agent preset a visible layer of a
    web-app profile patches, and in each stock preset that has none (``None``: no pruner
    runs there); ``None`` for a profile whose engines are top-level rows."""
    read = read_profile(home, profile, extra_patches)
    if not read.web_app:
        return None
    patched = _preset_rows(read.layers, PRUNER_ID)
    names = set(patched) | STOCK_PRESETS_WITHOUT_PRUNER
    return {name: _preset_pruner(patched, name) for name in sorted(names)}
