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
  and a web session compacts by it (tests/test_dsh_config.py).
- Nothing here evaluates a ``!!js`` expression: a row disabled by one "may run".
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from dshweb.core.errors import DshError
from dshweb.core.patchfile import PatchError, find_row, load_entry_list, read_patch
from dshweb.core.profiles import JsExpr
from dshweb.core.truth_settings import COMPACTION_BASIC
from dshweb.core.truth_settings import CONTEXT_TRUTH as CONTEXT_TRUTH_SCHEMA

CONTEXT_TRUTH = "dsh-context-truth"
CONTEXT_TRUTH_ID = "context-truth"
PRESET_PLUGIN = "@deepseek-ai/dsh-agent-preset"
PRESET_REGISTRY = "@deepseek-ai/dsh-agent-preset-registry"
ENGINES: Mapping[str, str] = {
    "@deepseek-ai/dsh-compaction-basic": "compaction-basic",
    "@deepseek-ai/dsh-compaction-tool-result-pruner": "tool-result-pruner",
}
"""Module name → the id the engine rows carry in every shipped profile."""

KNOWN_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "@deepseek-ai/dsh-compaction-basic": {
        **{k: v for k, v in COMPACTION_BASIC.defaults().items() if v is not None},
        "modelPolicies": [],
    },
    CONTEXT_TRUTH: CONTEXT_TRUTH_SCHEMA.defaults(),
}
"""Defaults the schema does not state (compaction-basic's live in its code, DSH_FACTS §7;
context-truth's in its README). A schema ``default`` wins over these."""

DUMP_TIMEOUT = 60.0
SCHEMA_TIMEOUT = 120.0


class DshConfigError(DshError):
    """``dsh`` could not be run, failed, or printed something unexpected."""


# --- running dsh -----------------------------------------------------------------------


def find_dsh() -> Path | None:
    """``dsh`` on PATH, else the one installed beside the running Python (a venv's bin)."""
    found = shutil.which("dsh")
    if found:
        return Path(found)
    beside = Path(sys.executable).with_name("dsh")
    return beside if beside.is_file() and os.access(beside, os.X_OK) else None


def _problem(stderr: str) -> str:
    """What ``dsh`` said, without the JavaScript stack."""
    lines = [line for line in stderr.splitlines() if not line.lstrip().startswith("at ")]
    return "\n".join(line for line in lines if line.strip())[-2000:]


def _run_dsh(
    dsh: Path, home: Path, args: Sequence[str], timeout: float, *, any_exit: bool = False
) -> tuple[str, str]:
    env = dict(os.environ)
    env.update(DSH_HOME=str(home), DSH_TELEMETRY_MODE="DISABLED")
    argv = [str(dsh), *args]
    try:
        done = subprocess.run(
            argv, env=env, cwd=home, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError as error:
        raise DshConfigError(f"cannot run {dsh}: not found") from error
    except subprocess.TimeoutExpired as error:
        raise DshConfigError(f"`{' '.join(args)}` did not finish within {timeout:g} s") from error
    except OSError as error:
        raise DshConfigError(f"cannot run {dsh}: {error.strerror}") from error
    if done.returncode != 0 and not (any_exit and done.stdout.strip()):
        said = _problem(done.stderr) or "(nothing on stderr)"
        raise DshConfigError(f"`dsh {' '.join(args)}` failed (exit {done.returncode}):\n{said}")
    return done.stdout, done.stderr


def _profile_dir(home: Path, profile: str, *, create: bool) -> Path:
    folder = home / "profiles" / profile
    if not create and not folder.is_dir():
        raise DshConfigError(f"profile {profile!r} does not exist in {home}")
    return folder


# --- the composed tree -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ComposedRow:
    """One row of the composed tree.

    ``layers`` is the origin then every layer that patched the row (bundle names,
    patch file paths), from the ``# ==`` comment above the top-level row; nested rows
    repeat their top-level row's. ``runs`` combines the row's and its ancestors'
    ``disabled`` the way the loader does: ``False`` if any is true, ``None`` if one is a
    ``!!js`` expression (decided at mount), else ``True``. A preset row's children run
    only in sessions that use that preset.
    """

    id: str
    name: str
    disabled: bool | JsExpr
    config: Any
    layers: tuple[str, ...]
    parents: tuple[str, ...] = ()
    preset: str | None = None
    group: bool = False
    runs: bool | None = True
    children: tuple[ComposedRow, ...] = ()
    entry: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def addressable(self) -> bool:
        """Whether a ``- id:`` patch row can target it (top level or in a top-level group)."""
        return self.preset is None

    @property
    def note(self) -> str | None:
        if self.preset is None:
            return None
        return f"nested in preset {self.preset}, not addressable by an id patch"

    def walk(self) -> Iterator[ComposedRow]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True, slots=True)
class ComposedConfig:
    rows: tuple[ComposedRow, ...]
    warnings: tuple[str, ...] = ()
    profile: str | None = None
    text: str = field(default="", repr=False)

    def walk(self) -> Iterator[ComposedRow]:
        """Every row, depth first, top-level rows in order."""
        for row in self.rows:
            yield from row.walk()

    def top(self, row_id: str) -> ComposedRow | None:
        """The last top-level row with ``row_id`` (ids may repeat)."""
        found = [row for row in self.rows if row.id == row_id]
        return found[-1] if found else None

    @property
    def default_preset(self) -> str | None:
        """The agent preset (its ``config.id``) that new sessions use."""
        for row in self.rows:
            if row.name == PRESET_REGISTRY and isinstance(row.config, dict):
                default = row.config.get("default")
                return default if isinstance(default, str) else None
        return None


def _layers(comment: str) -> tuple[str, ...]:
    body = comment.removeprefix("# ==").strip()
    origin, _, patched = body.partition(", patched by ")
    return (origin.strip(), *(p.strip() for p in patched.split(", ") if p.strip()))


def _is_preset(entry: Mapping[str, Any]) -> bool:
    config = entry.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("plugins"), list):
        return False
    plugins = config["plugins"]
    return entry.get("name") == PRESET_PLUGIN or (
        bool(plugins) and all(isinstance(p, dict) and "name" in p for p in plugins)
    )


def _runs(outer: bool | None, disabled: bool | JsExpr) -> bool | None:
    if outer is False or disabled is True:
        return False
    if outer is None or isinstance(disabled, JsExpr):
        return None
    return True


def _row(
    entry: Any,
    layers: tuple[str, ...],
    parents: tuple[str, ...],
    preset: str | None,
    outer: bool | None,
) -> ComposedRow | None:
    if not isinstance(entry, dict):
        return None
    raw_disabled = entry.get("disabled")
    disabled: bool | JsExpr = (
        raw_disabled if isinstance(raw_disabled, JsExpr) else bool(raw_disabled)
    )
    row_id = str(entry.get("id", ""))
    runs = _runs(outer, disabled)
    group = entry.get("group") is True
    config = entry.get("config")
    inner: list[Any] = []
    inner_preset = preset
    if group and isinstance(config, list):
        inner = config
    elif _is_preset(entry) and isinstance(config, dict):
        inner, inner_preset = config["plugins"], preset or row_id
    path = (*parents, row_id)
    children = tuple(
        child
        for child in (_row(e, layers, path, inner_preset, runs) for e in inner)
        if child is not None
    )
    return ComposedRow(
        id=row_id,
        name=str(entry.get("name", "")),
        disabled=disabled,
        config=config,
        layers=layers,
        parents=parents,
        preset=preset,
        group=group,
        runs=runs,
        children=children,
        entry=entry,
    )


def parse_dump(
    text: str, *, warnings: Sequence[str] = (), profile: str | None = None
) -> ComposedConfig:
    """The rows of a ``dsh --dump-config`` output."""
    try:
        entries, starts = load_entry_list(text, "dsh --dump-config output")
    except PatchError as error:
        raise DshConfigError(str(error)) from error
    lines = text.splitlines()
    annotations = [(n, line) for n, line in enumerate(lines) if line.startswith("# ==")]
    rows: list[ComposedRow] = []
    for entry, start in zip(entries, starts, strict=True):
        above = [line for n, line in annotations if n < start]
        row = _row(entry, _layers(above[-1]) if above else (), (), None, True)
        if row is not None:
            rows.append(row)
    return ComposedConfig(tuple(rows), tuple(warnings), profile, text)


def dump_config(
    home: Path,
    profile: str,
    *,
    dsh: Path,
    patches: Sequence[Path] = (),
    create: bool = False,
    timeout: float = DUMP_TIMEOUT,
) -> ComposedConfig:
    """``dsh --profile <profile> --dump-config`` on ``home``, parsed.

    ``patches`` are extra ``--patch`` overlays (applied last). ``dsh`` creates a shipped
    profile (``sdk``, ``web``, …) that does not exist yet; that happens only with
    ``create=True``, otherwise a missing profile folder is an error.
    """
    _profile_dir(home, profile, create=create)
    args = ["--profile", profile, "--dump-config"]
    for patch in patches:
        args += ["--patch", str(patch)]
    out, err = _run_dsh(dsh, home, args, timeout)
    warnings = [line.strip() for line in err.splitlines() if line.strip()]
    return parse_dump(out, warnings=warnings, profile=profile)


# --- the running engines ---------------------------------------------------------------


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
    if preset is None or not _is_preset(preset.entry):
        raise DshConfigError(f"{preset_id!r} is not an agent preset row of this profile")
    preset_config = copy.deepcopy(preset.config)
    hits = _replace_nested(preset_config["plugins"], engine_id, config)
    if hits != 1:
        where = "no" if hits == 0 else f"{hits}"
        raise DshConfigError(f"preset {preset_id!r} has {where} rows {engine_id!r}; expected one")
    return {"id": preset_id, "config": preset_config}


# --- schema ----------------------------------------------------------------------------


def dump_config_schema(
    home: Path, profile: str, *, dsh: Path, create: bool = False, timeout: float = SCHEMA_TIMEOUT
) -> dict[str, Any]:
    """``dsh --profile <profile> --dump-config-schema`` (it needs a profile: the schema
    lists that profile's rows and their config schemas).

    ``dsh`` exits 1 whenever a module of the profile cannot be imported (the stock web
    profile always has two) yet prints the whole schema; those problems are in
    ``schema["x-cordis"]["diagnostics"]``, and only a run without a schema fails.
    """
    _profile_dir(home, profile, create=create)
    args = ["--profile", profile, "--dump-config-schema"]
    out, err = _run_dsh(dsh, home, args, timeout, any_exit=True)
    try:
        schema = json.loads(out)
    except ValueError as error:
        said = _problem(err) or "(nothing on stderr)"
        raise DshConfigError(f"`dsh {' '.join(args)}` printed no JSON:\n{said}") from error
    if not isinstance(schema, dict) or "patchList" not in schema.get("$defs", {}):
        raise DshConfigError("dsh --dump-config-schema printed no patch schema")
    return schema


def _json_ready(value: Any) -> Any:
    if isinstance(value, JsExpr):
        return {"__jsExpr": value.source}
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value


def config_ref(schema: Mapping[str, Any], name: str) -> str | None:
    """The ``$defs`` key of the config schema of module ``name`` (None: not known)."""
    for entry in schema.get("x-cordis", {}).get("entries", []):
        ref = entry.get("configRef", "")
        if entry.get("name") == name and ref.startswith("#/$defs/"):
            key = str(ref.removeprefix("#/$defs/"))
            return None if key == "unknownConfig" else key
    return None


def config_defaults(schema: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    """Each config key's default for module ``name``: the schema's, else :data:`KNOWN_DEFAULTS`."""
    defaults = dict(KNOWN_DEFAULTS.get(name, {}))
    ref = config_ref(schema, name) if schema else None
    if schema and ref:
        definition = schema["$defs"].get(ref, {})
        for branch in [definition, *definition.get("anyOf", [])]:
            for key, prop in branch.get("properties", {}).items():
                if isinstance(prop, dict) and "default" in prop:
                    defaults[key] = prop["default"]
    return defaults


def _where(rows: Sequence[Any], path: Sequence[Any]) -> str:
    if not path or not isinstance(path[0], int):
        return "the patch"
    index, parts = path[0], list(path[1:])
    row = rows[index] if index < len(rows) else None
    label = f"row {index + 1}"
    if len(parts) >= 2 and parts[0] == "insert" and isinstance(parts[1], int):
        inner = parts[1]
        parts = parts[2:]
        inserted = row.get("insert") if isinstance(row, dict) else None
        row = inserted[inner] if isinstance(inserted, list) and inner < len(inserted) else None
        label += f", inserted row {inner + 1}"
    if isinstance(row, dict) and isinstance(row.get("id"), str):
        label += f" ({row['id']})"
    rest, node = "", row
    for part in parts:  # list items that are entries are named by their id
        node = _child(node, part)
        named = isinstance(part, int) and isinstance(node, dict) and isinstance(node.get("id"), str)
        rest += f"[{node['id']}]" if named else f"[{part}]" if isinstance(part, int) else f".{part}"
    rest = rest.lstrip(".")
    return f"{label}: {rest}" if rest else label


def _child(node: Any, part: Any) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _leaves(error: ValidationError) -> list[ValidationError]:
    """The errors a person can act on: inside an ``anyOf``, those of the branch that got
    furthest (the first one on a tie, which is the literal type, not ``!!js``)."""
    if not error.context:
        return [error]
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    chosen = max(branches.values(), key=lambda errors: max(len(e.absolute_path) for e in errors))
    return [leaf for sub in chosen for leaf in _leaves(sub)]


def _nested_checks(
    rows: Sequence[Any], schema: Mapping[str, Any]
) -> list[tuple[list[Any], Any, str]]:
    """(path, config, $defs key) of every entry inside a preset row of the patch: the
    patch schema does not look into ``config.plugins``."""
    found: list[tuple[list[Any], Any, str]] = []

    def visit(entries: Sequence[Any], path: list[Any]) -> None:
        for n, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            here = [*path, n]
            ref = config_ref(schema, str(entry.get("name", "")))
            if ref and "config" in entry:
                found.append(([*here, "config"], entry["config"], ref))
            if entry.get("group") is True and isinstance(entry.get("config"), list):
                visit(entry["config"], [*here, "config"])

    for n, row in enumerate(rows):
        targets: list[tuple[Any, list[Any]]] = [(row, [n])]
        if isinstance(row, dict) and isinstance(row.get("insert"), list):
            targets = [(r, [n, "insert", m]) for m, r in enumerate(row["insert"])]
        for target, path in targets:
            config = target.get("config") if isinstance(target, dict) else None
            if isinstance(config, dict) and isinstance(config.get("plugins"), list):
                visit(config["plugins"], [*path, "config", "plugins"])
    return found


def validate_patch(rows: Sequence[Any], schema: Mapping[str, Any]) -> list[str]:
    """Readable problems of patch ``rows`` under ``schema`` (from :func:`dump_config_schema`).

    The schema checks types and ranges, not key names (configs accept unknown keys);
    rows inside an agent preset's ``config.plugins`` are checked against their
    module's config schema too.
    """
    defs = schema.get("$defs", {})
    instance = _json_ready(list(rows))
    problems: list[tuple[list[Any], str]] = []
    checks: list[tuple[list[Any], Any, str]] = [([], instance, "patchList")]
    checks += [(p, _json_ready(c), ref) for p, c, ref in _nested_checks(rows, schema)]
    for prefix, value, ref in checks:
        validator = Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{ref}"})
        for error in validator.iter_errors(value):
            for leaf in _leaves(error):
                path = [*prefix, *leaf.absolute_path]
                problems.append((path, f"{_where(rows, path)}: {leaf.message}"))
    problems.sort(key=lambda p: [str(x) for x in p[0]])
    return list(dict.fromkeys(message for _, message in problems))


# --- context-truth ---------------------------------------------------------------------


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
        isinstance(item, dict) and item.get("name") == CONTEXT_TRUTH
        for row in rows
        if isinstance(row, dict) and isinstance(row.get("insert"), list)
        for item in row["insert"]
    )


def _howto(profile: str, profile_patch: Path, installed: bool) -> str:
    insert = f"- insert:\n    - id: {CONTEXT_TRUTH_ID}\n      name: {CONTEXT_TRUTH}"
    if installed:
        return (
            f"Its package is installed but nothing assembles it. List it in package.json "
            f"dsh.profile.bundles (its bundle patch inserts the row), or save its settings "
            f"here to add this insert row to {profile_patch}:\n{insert}"
        )
    return (
        f"Install it with `dsh plugin --profile {profile} add {CONTEXT_TRUTH}` (needs pnpm; "
        f"the package is not on the npm registry, so use "
        f"`dsh plugin --profile {profile} add github:deepseekv41flash/{CONTEXT_TRUTH}`): "
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
    if isinstance(dependencies, dict) and CONTEXT_TRUTH in dependencies:
        sources.append("package.json dependencies")
    installed = (folder / "node_modules" / CONTEXT_TRUTH / "package.json").is_file()
    if installed:
        sources.append("installed in node_modules")
    dsh_section = package.get("dsh")
    bundles = dsh_section.get("profile", {}).get("bundles") if isinstance(dsh_section, dict) else []
    listed = isinstance(bundles, list) and CONTEXT_TRUTH in bundles
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
        row_ids = tuple(row.id for row in composed.walk() if row.name == CONTEXT_TRUTH)
        sources += [f"composed row {row_id}" for row_id in row_ids]
        present = bool(row_ids)
    else:
        present = (listed and installed) or inserted
    howto = None if present else _howto(profile, profile_patch, installed)
    return Presence(present, installed, tuple(sources), row_ids, howto)


# --- where values come from ------------------------------------------------------------


class SourceKind(StrEnum):
    DEFAULT = "default"
    BUNDLE = "bundle"
    PROFILE = "profile"
    HOME = "home"
    OVERLAY = "overlay"


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
    row: ComposedRow, composed: ComposedConfig, files: Sequence[tuple[Path, SourceKind]]
) -> tuple[SourceKind, tuple[str, ...]]:
    """Which layer set the config of the row that owns ``row``'s config."""
    owner = composed.top(row.preset) if row.preset else row
    owner = owner or row
    for path, kind in reversed(files):
        if not any(_same_file(layer, path) for layer in owner.layers):
            continue
        try:
            found = find_row(read_patch(path), owner.id)
        except DshError:
            continue
        if found is not None and "config" in found.data:
            return kind, (str(path),)
    bundles = tuple(layer for layer in owner.layers if not os.path.isabs(layer))
    return SourceKind.BUNDLE, bundles


def value_sources(
    composed: ComposedConfig,
    row: ComposedRow,
    *,
    home: Path,
    profile: str,
    schema: Mapping[str, Any] | None = None,
    patches: Sequence[Path] = (),
) -> dict[str, ValueSource]:
    """For each config key of ``row`` (set, or known to have a default), its source.

    A patch ``config`` replaces the whole config, so every key that is set comes from
    the last layer that wrote the config of the row (for a row inside a preset: of
    the preset row); the keys it leaves out take their defaults.
    """
    files = [
        (home / "profiles" / profile / "cordis.patch.yml", SourceKind.PROFILE),
        (home / "cordis.patch.yml", SourceKind.HOME),
        *((p, SourceKind.OVERLAY) for p in patches),
    ]
    config = row.config if isinstance(row.config, dict) else {}
    sources: dict[str, ValueSource] = {}
    if config:
        kind, layers = _config_layer(row, composed, files)
        for key, value in config.items():
            sources[key] = ValueSource(key, value, kind, layers)
    for key, value in config_defaults(schema, row.name).items():
        sources.setdefault(key, ValueSource(key, value, SourceKind.DEFAULT, ()))
    return sources
