"""YAML read the way DSH reads its patch files: js-yaml 4.3.2, ``JSON_SCHEMA`` plus ``!!js``.

Observed on the real runtime (``dsh --dump-config`` on 259 probe files) and read off the
js-yaml it bundles. The rules, in short:

- untagged plain scalars resolve as the JSON schema does: ``null``/``Null``/``NULL``/``~``
  and empty are null; ``true``/``True``/``TRUE`` (and false) are booleans; integers are
  ``[-+]?(0b…|0x…|0o…|[0-9]+)`` (no ``_``, leading zeros are decimal); floats have digits
  before an optional point (``.5`` is 0.5, ``-.5`` a string) or are ``.inf``/``.nan``;
  everything else — ``yes``, ``on``, ``1_000``, ``2001-12-14``, ``12:30`` — is a string;
- numbers are JavaScript numbers (``1.0`` is 1, integers past 2**53 are rounded);
- the only tags are ``!!str``, ``!!seq``, ``!!map``, ``!!null``, ``!!bool``, ``!!int``,
  ``!!float`` (the text must pass that type's rule) and ``!!js`` (kept as
  :class:`JsExpr`, never evaluated); any other tag is an error;
- mapping keys become JavaScript strings, and a repeated key (after that:
  ``1`` and ``"1"`` collide) is an error; ``<<`` is an ordinary key (no merging);
- anchors may be redefined; an alias is the same object; a cycle is refused (DSH fails
  on it when composing); nesting is limited to 100 levels; one document only.

:func:`load_yaml` returns plain values or raises :class:`DshYamlError` with DSH's reason
and a 1-based line and column where js-yaml gives one. It runs on PyYAML's pure-Python
scanner, taught js-yaml's tabs (separating space anywhere but in indentation); two
corners still differ: an implicit key over 1024 characters, and U+0085 read as a line
break. There this loader refuses a file DSH accepts (the error says where).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from yaml.nodes import Node

from dshweb.core.errors import DshError
from dshweb.core.log.jsjson import js_number

MAX_DEPTH = 100
"""js-yaml's ``maxDepth``."""
MAX_VALUES = 100_000
"""The most values a document may expand to through its aliases (js-yaml has no bound;
an alias bomb costs DSH seconds and then fails, dshweb refuses it at once)."""

_PLAIN = "tag:dshweb:plain"
"""The tag an untagged plain scalar carries until it is resolved."""
_Y = "tag:yaml.org,2002:"


@dataclass(frozen=True, slots=True)
class JsExpr:
    """A ``!!js`` expression from a patch: kept as text, never evaluated."""

    source: str


class DshYamlError(DshError):
    """Text DSH's loader refuses; ``line`` and ``column`` are 1-based when known."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None) -> None:
        where = f" ({line}:{column})" if line is not None else ""
        super().__init__(f"{reason}{where}")
        self.reason, self.line, self.column = reason, line, column


def _error(reason: str, mark: Any) -> DshYamlError:
    if mark is None:
        return DshYamlError(reason)
    return DshYamlError(reason, mark.line + 1, mark.column + 1)


# -- scalars ----------------------------------------------------------------------------

_INT = re.compile(r"[-+]?(?:0b[01]+|0x[0-9a-fA-F]+|0o[0-7]+|[0-9]+)\Z")
_FLOAT = re.compile(
    r"(?:[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"
)
_SPECIAL = re.compile(r"(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z")
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})


def _int_value(text: str) -> float | None:
    if not _INT.match(text):
        return None
    sign, body = (-1.0 if text[0] == "-" else 1.0), text.lstrip("+-")
    if body == "0":
        return 0.0  # js-yaml: "-0" is +0 ("-00" and "-0x0" are -0)
    base = {"b": 2, "x": 16, "o": 8}.get(body[1:2], 10) if body[0] == "0" else 10
    try:
        value = float(int(body if base == 10 else body[2:], base))
    except OverflowError:
        return None  # not finite: not an int
    return sign * value


def _float_value(text: str) -> float | None:
    if not _FLOAT.match(text):
        return None
    if _SPECIAL.match(text):
        low = text.lower()
        return math.nan if low.endswith("nan") else (-math.inf if low[0] == "-" else math.inf)
    value = float(text)
    return value if math.isfinite(value) else None


def _number(value: float) -> int | float:
    """A JavaScript number as Python holds it: integral (and not -0) as ``int``."""
    if math.isfinite(value) and value.is_integer() and math.copysign(1, value) > 0:
        return int(value)
    return value


def resolve_plain(text: str) -> Any:
    """The value of an untagged plain scalar."""
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    for resolve in (_int_value, _float_value):
        value = resolve(text)
        if value is not None:
            return _number(value)
    return text


def _tagged(tag: str, text: str | None, node: Node) -> Any:
    """An explicitly tagged scalar; ``text`` is None for an empty plain node."""
    if tag == _Y + "str":
        return "" if text is None else text
    if tag == _Y + "js" and text is not None:
        return JsExpr(text)
    if tag == _Y + "null" and (text is None or text in _NULLS):
        return None
    if tag == _Y + "bool" and text is not None and text in _TRUE | _FALSE:
        return text in _TRUE
    if tag in (_Y + "int", _Y + "float") and text is not None:
        value = (_int_value if tag.endswith("int") else _float_value)(text)
        if value is not None:
            return _number(value)
    known = ("str", "js", "null", "bool", "int", "float")
    if tag not in {_Y + k for k in known}:
        raise _error(f"unknown tag !<{tag}>", node.end_mark)
    raise _error(f"cannot resolve a node with !<{tag}> explicit tag", node.end_mark)


# -- keys -------------------------------------------------------------------------------

_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")


def _js_string(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, str):
        return value
    return "[object Object]"  # a mapping or a JsExpr


def _key(value: Any, mark: Any) -> str:
    if isinstance(value, list):
        if any(isinstance(item, list) for item in value):
            raise _error("nested arrays are not supported inside keys", mark)
        return ",".join("" if item is None else _js_string(item) for item in value)
    return _js_string(value)


def _js_order(mapping: dict[str, Any]) -> dict[str, Any]:
    """A JavaScript object's key order: array-index keys ascending, then the rest."""
    indexes = sorted((k for k in mapping if _INDEX.match(k) and int(k) < 2**32 - 1), key=int)
    if not indexes:
        return mapping
    ordered = {k: mapping[k] for k in indexes}
    ordered.update((k, v) for k, v in mapping.items() if k not in ordered)
    return ordered


# -- loading ----------------------------------------------------------------------------


def compose_yaml(text: str) -> Node | None:
    """The node tree of the one document of ``text`` (``None`` when there is none); its
    marks locate every value in the text (the settings editor splices with them)."""
    text = text.removeprefix("\ufeff")
    if "\0" in text:
        at = text.index("\0")
        line = text.count("\n", 0, at) + 1
        raise DshYamlError("null byte is not allowed in input", line, at - text.rfind("\n", 0, at))
    import yaml  # here, not at import: PyYAML is a third of a command's start-up

    from dshweb.core.profile.yamlloader import Loader

    loader = Loader(text)
    try:
        document = loader.get_node() if loader.check_node() else None
        if loader.check_node():
            raise DshYamlError("expected a single document in the stream, but found more")
        return document
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        if "'\\t'" in problem or "'\t'" in problem:
            problem = "tab characters must not be used in indentation"  # js-yaml's words
        raise _error(problem, mark) from None
    except yaml.YAMLError as error:
        raise DshYamlError(str(error).splitlines()[0]) from None
    finally:
        loader.dispose()


def construct(node: Node) -> Any:
    """The value of a composed node, as DSH builds it (an alias bomb is refused)."""
    from dshweb.core.profile.yamlloader import construct_node

    return construct_node(node)


def load_yaml(text: str) -> Any:
    """The one document of ``text`` as DSH reads it (``None`` when there is none)."""
    node = compose_yaml(text)
    return None if node is None else construct(node)


def check_patch_rows(rows: Any) -> list[dict[str, Any]]:
    """The checks DSH makes on a patch file's value after parsing it."""
    if not isinstance(rows, list):
        raise DshYamlError("must be a top-level YAML array of loader patch entries")
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise DshYamlError(f"entry {number} must be a mapping (a loader patch entry)")
        if row.get("insert") is not None and not isinstance(row["insert"], list):
            raise DshYamlError(f"entry {number}: insert must be a list of rows")
    return rows


def load_patch_rows(text: str) -> list[dict[str, Any]]:
    """The rows of a patch file, as DSH reads and checks them."""
    return check_patch_rows(load_yaml(text))
