"""The compaction engines that run in a profile, and the patch that reaches a preset's.

Contract: :func:`active_engine_rows` lists the enabled (or ``!!js``-conditional)
``compaction-basic`` and ``tool-result-pruner`` rows of a composed tree: top-level ones,
or, in profiles built on the web-app bundle, the ones inside each agent preset. An id
patch cannot reach those; a patch of the preset row itself can (its ``config`` replaces
the preset's whole config), so :func:`preset_engine_patch` copies the composed one,
``!!js`` included, and changes only the engine's config. ``dsh --profile web
--dump-config`` shows the value in the preset's nested engine, and a web session
compacts by it (tests/core/settings/test_dsh_config.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dshweb.core.settings.dshconfig.composed import ComposedConfig, ComposedRow, is_preset
from dshweb.core.settings.dshconfig.errors import DshConfigError

ENGINES: Mapping[str, str] = {
    "@deepseek-ai/dsh-compaction-basic": "compaction-basic",
    "@deepseek-ai/dsh-compaction-tool-result-pruner": "tool-result-pruner",
}
"""Module name → the id the engine rows carry in every shipped profile."""


@dataclass(frozen=True, slots=True)
class EngineRow:
    """A compaction engine that runs (``conditional``: only if a ``!!js`` allows it).

    ``preset`` is the preset row's id (``preset-standard``) and ``preset_name`` its
    ``config.id`` (``standard``) when the engine lives inside an agent preset.
    """

    engine: str
    row: ComposedRow
    config: dict[str, Any]
    preset: str | None
    preset_name: str | None
    default_preset: bool
    conditional: bool

    @property
    def addressable(self) -> bool:
        return self.row.addressable


def active_engine_rows(composed: ComposedConfig) -> list[EngineRow]:
    """Where the running ``compaction-basic`` and ``tool-result-pruner`` are."""
    names = _preset_names(composed)
    default = composed.default_preset
    found: list[EngineRow] = []
    for row in composed.walk():
        engine = ENGINES.get(row.name)
        if engine is None or row.runs is False:
            continue
        config = dict(row.config) if isinstance(row.config, dict) else {}
        preset_name = names.get(row.preset) if row.preset else None
        found.append(
            EngineRow(
                engine=engine,
                row=row,
                config=config,
                preset=row.preset,
                preset_name=preset_name,
                default_preset=preset_name is not None and preset_name == default,
                conditional=row.runs is None,
            )
        )
    return found


def _preset_names(composed: ComposedConfig) -> dict[str, str]:
    names: dict[str, str] = {}
    for row in composed.rows:
        if isinstance(row.config, dict) and isinstance(row.config.get("id"), str):
            names[row.id] = row.config["id"]
    return names


def _replace_nested(entries: list[Any], engine_id: str, config: Mapping[str, Any]) -> int:
    hits = 0
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if entry.get("id") == engine_id and entry.get("group") is not True:
            if config:
                entry["config"] = copy.deepcopy(dict(config))
            else:
                entry.pop("config", None)
            hits += 1
        elif entry.get("group") is True and isinstance(entry.get("config"), list):
            hits += _replace_nested(entry["config"], engine_id, config)
    return hits


def preset_engine_patch(
    composed: ComposedConfig, preset_id: str, engine_id: str, config: Mapping[str, Any]
) -> dict[str, Any]:
    """The patch row that gives ``engine_id`` inside preset ``preset_id`` the config ``config``.

    A patch ``config`` replaces the preset's whole config, so the row carries a copy of
    the composed one (``!!js`` expressions as they are) in which only the engine's
    ``config`` differs (an empty ``config`` removes it: the engine's defaults). Write it
    with ``set_row_config(text, row["id"], row["config"])``. The copy freezes the
    preset as this ``dsh`` composes it: a later bundle change to that preset is hidden
    until the row is saved again.
    """
    preset = composed.top(preset_id)
    if preset is None or not is_preset(preset.entry):
        raise DshConfigError(f"{preset_id!r} is not an agent preset row of this profile")
    preset_config = copy.deepcopy(preset.config)
    hits = _replace_nested(preset_config["plugins"], engine_id, config)
    if hits != 1:
        where = "no" if hits == 0 else f"{hits}"
        raise DshConfigError(f"preset {preset_id!r} has {where} rows {engine_id!r}; expected one")
    return {"id": preset_id, "config": preset_config}
