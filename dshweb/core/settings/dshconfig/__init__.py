"""The composed profile as the real ``dsh`` sees it (``--dump-config``, DSH_FACTS §9).

Contract:

- Only ``dsh`` knows the composed tree: the bundles' patches live inside the executable.
  :func:`dump_config` runs ``dsh --profile <p> --dump-config`` (telemetry off) and
  :func:`parse_dump` reads its output: every top-level row carries the layers named by
  the ``# == <origin>, patched by <layer>, …`` comment above it; rows nested in
  ``group: true`` rows or in an agent preset's ``config.plugins`` are listed as
  children. Rows inside a preset are not addressable by an id patch.
- The running compaction engines (:func:`active_engine_rows`) are the enabled
  top-level ones, or, in profiles built on the web-app bundle, the ones inside each
  agent preset. An id patch cannot reach those; a patch of the preset row itself can
  (its ``config`` replaces the preset's whole config, so :func:`preset_engine_patch`
  copies the composed one, ``!!js`` included, and changes only the engine's config).
  ``dsh --profile web --dump-config`` shows the value in the preset's nested engine,
  and a web session compacts by it (tests/core/settings/test_dsh_config.py).
- Nothing here evaluates a ``!!js`` expression: a row disabled by one "may run".

Modules: :mod:`.run` (running ``dsh``), :mod:`.composed` (parsing its tree),
:mod:`.engines` (the running engines, the preset-engine patch), :mod:`.schema` (the
JSON-schema checks, config defaults), :mod:`.presence` (context-truth presence),
:mod:`.sources` (where values come from), :mod:`.errors`. This package re-exports
their public API; import it from here.
"""

from __future__ import annotations

from dshweb.core.profile.profile import CONTEXT_TRUTH_ID, CONTEXT_TRUTH_PACKAGE
from dshweb.core.settings.dshconfig.composed import (
    PRESET_PLUGIN,
    PRESET_REGISTRY,
    ComposedConfig,
    ComposedRow,
    parse_dump,
)
from dshweb.core.settings.dshconfig.engines import (
    ENGINES,
    EngineRow,
    active_engine_rows,
    preset_engine_patch,
)
from dshweb.core.settings.dshconfig.errors import DshConfigError
from dshweb.core.settings.dshconfig.presence import Presence, context_truth_presence
from dshweb.core.settings.dshconfig.run import (
    DUMP_TIMEOUT,
    SCHEMA_TIMEOUT,
    dump_config,
    dump_config_schema,
    find_dsh,
)
from dshweb.core.settings.dshconfig.schema import (
    KNOWN_DEFAULTS,
    config_defaults,
    config_ref,
    validate_patch,
)
from dshweb.core.settings.dshconfig.sources import SourceKind, ValueSource, value_sources

__all__ = [
    "CONTEXT_TRUTH_ID",
    "CONTEXT_TRUTH_PACKAGE",
    "DUMP_TIMEOUT",
    "ENGINES",
    "KNOWN_DEFAULTS",
    "PRESET_PLUGIN",
    "PRESET_REGISTRY",
    "SCHEMA_TIMEOUT",
    "ComposedConfig",
    "ComposedRow",
    "DshConfigError",
    "EngineRow",
    "Presence",
    "SourceKind",
    "ValueSource",
    "active_engine_rows",
    "config_defaults",
    "config_ref",
    "context_truth_presence",
    "dump_config",
    "dump_config_schema",
    "find_dsh",
    "parse_dump",
    "preset_engine_patch",
    "validate_patch",
    "value_sources",
]
