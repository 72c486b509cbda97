"""Where each config value of a composed row comes from: a patch file, a bundle, a default.

Contract: :func:`value_sources` maps every config key of a row (set, or known to have a
default) to a :class:`ValueSource`. A patch ``config`` replaces the whole config, so all
keys that are set share the last layer that wrote the config of the row that owns it
(for a row inside a preset: the preset row); the layer is found by reading the
profile's patch layers (:attr:`~dshweb.core.profile.profile.Profile.layers`), else it is
one of the bundles inside ``dsh``. Keys left
out take their defaults (:func:`~dshweb.core.settings.dshconfig.schema.config_defaults`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from dshweb.core.errors import DshError
from dshweb.core.profile.profile import Layer, LayerKind, Profile
from dshweb.core.settings.dshconfig.composed import ComposedConfig, ComposedRow
from dshweb.core.settings.dshconfig.schema import config_defaults
from dshweb.core.settings.patchfile import find_row, read_layer


class SourceKind(StrEnum):
    DEFAULT = "default"
    BUNDLE = "bundle"
    PROFILE = LayerKind.PROFILE.value
    HOME = LayerKind.HOME.value
    OVERLAY = LayerKind.OVERLAY.value


@dataclass(frozen=True, slots=True)
class ValueSource:
    """Where one config key's current value comes from.

    ``layers``: the patch file for ``profile``/``home``/``overlay``; for ``bundle``, the
    bundles that may have set it (origin and patching bundles: their patches are inside
    ``dsh`` and unseen); empty for ``default``. ``value`` is ``None`` for a default this
    module does not know.
    """

    key: str
    value: Any
    kind: SourceKind
    layers: tuple[str, ...]

    def describe(self) -> str:
        if self.kind is SourceKind.DEFAULT:
            return "default"
        if self.kind is SourceKind.BUNDLE:
            return "bundle " + " or ".join(self.layers)
        return f"{self.kind.value} patch {self.layers[0]}"


def _same_file(a: str, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _config_layer(
    row: ComposedRow, composed: ComposedConfig, layers: tuple[Layer, ...]
) -> tuple[SourceKind, tuple[str, ...]]:
    """Which layer set the config of the row that owns ``row``'s config."""
    owner = composed.top(row.preset) if row.preset else row
    owner = owner or row
    for layer in reversed(layers):
        if not any(_same_file(named, layer.path) for named in owner.layers):
            continue
        try:
            found = find_row(read_layer(layer), owner.id)
        except DshError:
            continue
        if found is not None and "config" in found.data:
            return SourceKind(layer.kind.value), (str(layer.path),)
    bundles = tuple(layer for layer in owner.layers if not os.path.isabs(layer))
    return SourceKind.BUNDLE, bundles


def value_sources(
    composed: ComposedConfig,
    row: ComposedRow,
    *,
    profile: Profile,
    schema: Mapping[str, Any] | None = None,
) -> dict[str, ValueSource]:
    """For each config key of ``row`` (set, or known to have a default), its source.

    A patch ``config`` replaces the whole config, so every key that is set comes from
    the last layer that wrote the config of the row (for a row inside a preset: of
    the preset row); the keys it leaves out take their defaults. The profile's
    ``extra_patches`` are its overlay layers.
    """
    config = row.config if isinstance(row.config, dict) else {}
    sources: dict[str, ValueSource] = {}
    if config:
        kind, layers = _config_layer(row, composed, profile.layers)
        for key, value in config.items():
            sources[key] = ValueSource(key, value, kind, layers)
    for key, value in config_defaults(schema, row.name).items():
        sources.setdefault(key, ValueSource(key, value, SourceKind.DEFAULT, ()))
    return sources
