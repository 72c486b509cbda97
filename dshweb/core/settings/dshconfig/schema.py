"""Checking patch rows against the JSON schema ``dsh --dump-config-schema`` prints.

Contract: :func:`validate_patch` returns readable problems, one per place, each naming
the row (by position and id) and the key path; the schema checks types and ranges, not
key names, and ``!!js`` values are checked as the ``{"__jsExpr": …}`` objects the schema
allows. Rows inside an agent preset's ``config.plugins`` are checked against their
module's config schema too (the patch schema does not look there).
:func:`config_defaults` gives a module's config defaults: the schema's, else
:data:`KNOWN_DEFAULTS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.plugins import COMPACTION_BASIC_SCHEMA, CONTEXT_TRUTH_SCHEMA
from dshweb.core.profile.profile import CONTEXT_TRUTH_PACKAGE

KNOWN_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "@deepseek-ai/dsh-compaction-basic": {
        **{k: v for k, v in COMPACTION_BASIC_SCHEMA.defaults().items() if v is not None},
        "modelPolicies": [],
    },
    CONTEXT_TRUTH_PACKAGE: CONTEXT_TRUTH_SCHEMA.defaults(),
}
"""Defaults the schema does not state (compaction-basic's live in its code, DSH_FACTS §7;
context-truth's in its README). A schema ``default`` wins over these."""


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
