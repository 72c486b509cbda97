"""The composed tree as ``dsh --dump-config`` prints it, parsed (no process is run here).

Contract: :func:`parse_dump` turns the output into :class:`ComposedRow` trees. Every
top-level row carries the layers named by the ``# == <origin>, patched by <layer>, …``
comment above it; rows nested in ``group: true`` rows or in an agent preset's
``config.plugins`` (:func:`is_preset`) are its children and repeat its layers. Rows
inside a preset are not addressable by an id patch. Whether a row runs combines its and
its ancestors' ``disabled``; a ``!!js`` one is never evaluated, only "may run" (None).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.settings.dshconfig.errors import DshConfigError
from dshweb.core.settings.patchfile import PatchError, load_entry_list

PRESET_PLUGIN = "@deepseek-ai/dsh-agent-preset"
PRESET_REGISTRY = "@deepseek-ai/dsh-agent-preset-registry"


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


def is_preset(entry: Mapping[str, Any]) -> bool:
    """Whether the entry is an agent preset (rows of its own in ``config.plugins``)."""
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
    elif is_preset(entry) and isinstance(config, dict):
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
