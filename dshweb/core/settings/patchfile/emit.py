"""Python values as YAML text the way a person would write them into a patch file.

Contract: :func:`emit_mapping` and :func:`emit_entry` render block-style YAML whose
first line is unindented and whose further lines sit at a given indent, joined by the
file's own line break. Multi-line strings become ``|`` blocks, long sentences ``>``
blocks folded at :data:`FOLD_WIDTH`, ``null`` is spelled out, :class:`JsExpr` becomes
a ``!!js`` scalar, and a new string that YAML 1.1 would read as something else
(``yes``, ``0o7``, ``2024-01-01``) is single-quoted. NaN, infinities and values that
are not plain data raise :class:`TypeError`.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import TaggedScalar
from ruamel.yaml.scalarstring import (
    FoldedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)

from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.patch import JS_TAG

FOLD_WIDTH = 80

_YAML11_NON_STRINGS = re.compile(
    r"(?i:y|yes|n|no|true|false|on|off|null|~)$"
    r"|[-+]?(0b[01_]+|0o?[0-7_]+|0x[0-9a-f_]+|[0-9][0-9_]*(:[0-5]?[0-9])+)$"
    r"|[-+]?([0-9][0-9_]*)?\.?[0-9_]*([eE][-+]?[0-9]+)?$"
    r"|[-+]?\.(inf|Inf|INF)$|\.(nan|NaN|NAN)$|<<$|=$"
    r"|\d{4}-\d\d?-\d\d?"
)


def _foldable(text: str) -> bool:
    return (
        len(text) > FOLD_WIDTH
        and text.isprintable()
        and text == text.strip()
        and "  " not in text
        and " " in text
    )


def _folded(text: str) -> FoldedScalarString:
    folded: FoldedScalarString = FoldedScalarString(text)
    positions: list[int] = []
    start = 0
    while len(text) - start > FOLD_WIDTH:
        cut = text.rfind(" ", start, start + FOLD_WIDTH + 1)
        if cut <= start:
            cut = text.find(" ", start + FOLD_WIDTH)
        if cut == -1:
            break
        positions.append(cut)
        start = cut + 1
    folded.fold_pos = positions  # type: ignore[attr-defined]
    return folded


def _literal_ok(text: str) -> bool:
    lines = text.split("\n")
    return (
        all(line.isprintable() and line == line.rstrip() for line in lines)
        and not text.startswith((" ", "\n"))
        and "\t" not in text
    )


def _yaml_value(value: Any) -> Any:
    """Python plain → what ruamel emits the way a person would write it."""
    if isinstance(value, JsExpr):
        return TaggedScalar(value=value.source, style=None, tag=JS_TAG)
    if isinstance(value, str):
        if "\n" in value and _literal_ok(value):
            return LiteralScalarString(value)
        if _foldable(value):
            return _folded(value)
        if _YAML11_NON_STRINGS.match(value):
            return SingleQuotedScalarString(value)
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TypeError(f"cannot write the number {value} into a patch")
        return value
    if isinstance(value, Mapping):
        return {_yaml_value(str(k)): _yaml_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_yaml_value(v) for v in value]
    raise TypeError(f"cannot write a {type(value).__name__} into a patch")


def _emitter() -> YAML:
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.representer.add_representer(
        type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return yaml


def emit_mapping(mapping: Mapping[str, Any], indent: int, newline: str) -> str:
    """``mapping`` in block style, its first line unindented, the rest at ``indent``."""
    stream = io.StringIO()
    _emitter().dump(_yaml_value(mapping), stream)
    lines = stream.getvalue().rstrip("\n").split("\n")
    return newline.join(
        [lines[0], *((" " * indent + line) if line else line for line in lines[1:])]
    )


def emit_entry(key: str, value: Any, indent: int, newline: str) -> str:
    return emit_mapping({key: value}, indent, newline)
