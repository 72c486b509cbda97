"""Minimal, comment-preserving edits of a DSH patch file (``cordis.patch.yml``, DSH_FACTS §9).

Contract:

- :func:`read_patch` returns the file's text, the sha256 of its bytes and its rows as
  plain Python (``!!js`` scalars become :class:`JsExpr`). A missing file reads as the
  file ``dsh`` creates (:data:`DEFAULT_PATCH_TEXT`) with the sha256 of no bytes.
- :func:`set_row_config` splices new text into the old: only the target row's
  ``config:`` entry changes (inside a block mapping, only the keys whose value
  changed), every other byte stays. The result is parsed again and compared with the
  old rows; if anything but that config would change, it raises instead of returning.
- :func:`write_patch_atomically` is a compare-and-swap on the sha256: a file that
  changed since it was read is left alone and reported with its current text.

Parsing follows YAML 1.2 like DSH's own loader (``yes`` is a string); new strings that
YAML 1.1 would read as something else are quoted anyway.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import math
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ruamel.yaml import YAML
from ruamel.yaml.comments import TaggedScalar
from ruamel.yaml.constructor import ConstructorError, SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.scalarstring import (
    FoldedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)

from dshweb.core.errors import DshError
from dshweb.core.profiles import JsExpr

DEFAULT_PATCH_TEXT = (
    "# Your patch layer for this dsh profile, applied after every bundle layer:\n"
    "# a top-level YAML array of loader patch entries (id-targeted config\n"
    "# overrides, disables, and insert lists; `!!js` expressions allowed).\n"
    "[]\n"
)
"""What ``dsh`` writes into a new profile's ``cordis.patch.yml``."""

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
"""The sha256 a missing file reads with."""

JS_TAG = "tag:yaml.org,2002:js"
FOLD_WIDTH = 80
NEW_FILE_MODE = 0o644


class PatchError(DshError):
    """A patch file that cannot be read or edited as asked."""


class PatchSyntaxError(PatchError):
    """The file is not valid YAML; ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, *, line: int, column: int) -> None:
        super().__init__(f"{message} at line {line}, column {column}")
        self.line = line
        self.column = column


class PatchConflict(PatchError):
    """The file changed since it was read; nothing was written."""

    def __init__(self, path: Path, *, current_text: str, current_sha256: str) -> None:
        super().__init__(f"{path} changed since it was read; nothing was written")
        self.path = path
        self.current_text = current_text
        self.current_sha256 = current_sha256


@dataclass(frozen=True, slots=True)
class PatchDocument:
    path: Path | None
    text: str
    sha256: str
    exists: bool
    rows: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class PatchRow:
    """One row of a patch file that targets or inserts ``id``.

    ``where`` is ``"top"`` for a top-level ``- id:`` row (``index`` is its position)
    and ``"insert"`` for a row inside the ``- insert:`` list at ``index``
    (``insert_index`` is its position there).
    """

    id: str
    where: Literal["top", "insert"]
    index: int
    insert_index: int | None
    data: Mapping[str, Any]

    @property
    def config(self) -> dict[str, Any] | None:
        config = self.data.get("config")
        return dict(config) if isinstance(config, dict) else None


# --- parsing ---------------------------------------------------------------------------


class _PlainConstructor(SafeConstructor):
    """Plain Python values; ``!!js`` as :class:`JsExpr`, dates as the text DSH keeps."""


def _construct_js(constructor: SafeConstructor, node: Node) -> JsExpr:
    if not isinstance(node, ScalarNode):
        raise ConstructorError(None, None, "a !!js tag must be on a scalar", node.start_mark)
    return JsExpr(str(node.value))


def _construct_text(constructor: SafeConstructor, node: Node) -> str:
    return str(node.value)


def _construct_int(constructor: SafeConstructor, node: Node) -> int | str:
    if "_" in str(node.value):  # DSH's loader (js-yaml, JSON schema) keeps `1_000` a string
        return str(node.value)
    return int(constructor.construct_yaml_int(node))


_PlainConstructor.add_constructor(JS_TAG, _construct_js)
_PlainConstructor.add_constructor("tag:yaml.org,2002:timestamp", _construct_text)
_PlainConstructor.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _loader() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = _PlainConstructor
    return yaml


def _syntax_error(error: YAMLError, text: str, name: str) -> PatchSyntaxError:
    if isinstance(error, MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        if mark is not None:
            return PatchSyntaxError(
                f"{name}: {problem}", line=mark.line + 1, column=mark.column + 1
            )
    if isinstance(error, ReaderError):
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        return PatchSyntaxError(f"{name}: {error.reason}", line=line, column=column)
    return PatchSyntaxError(f"{name}: {error}", line=1, column=1)


@dataclass(frozen=True, slots=True)
class _Parsed:
    root: Node | None
    rows: tuple[Any, ...]


def _parse(text: str, name: str = "patch") -> _Parsed:
    yaml = _loader()
    try:
        root = yaml.compose(text)
        value = None if root is None else yaml.constructor.construct_document(root)
    except YAMLError as error:
        raise _syntax_error(error, text, name) from error
    if value is None:
        return _Parsed(root, ())
    if not isinstance(value, list) or not isinstance(root, SequenceNode):
        raise PatchError(f"{name} is not a YAML list of patch rows")
    return _Parsed(root, tuple(value))


def load_entry_list(text: str, name: str = "patch") -> tuple[list[Any], list[int]]:
    """The rows of an entry or patch list as plain values, and the 0-based line where
    each row starts (to pair rows with the comments ``dsh --dump-config`` puts above)."""
    parsed = _parse(text, name)
    starts = [] if parsed.root is None else [int(n.start_mark.line) for n in parsed.root.value]
    return list(parsed.rows), starts


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_patch(path: Path) -> PatchDocument:
    """The patch file at ``path``; raises :class:`PatchSyntaxError` if it does not parse."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return PatchDocument(path, DEFAULT_PATCH_TEXT, EMPTY_SHA256, False, ())
    except OSError as error:
        raise PatchError(f"cannot read {path}: {error.strerror}") from error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PatchError(f"{path} is not UTF-8 text") from error
    return PatchDocument(path, text, _sha256(data), True, _parse(text, str(path)).rows)


def _locate(rows: Sequence[Any], row_id: str) -> tuple[int, int | None] | None:
    """Where the row that decides ``row_id``'s config is: the last one that has a
    ``config`` key, else the last one naming ``row_id``."""
    found: list[tuple[int, int | None, bool]] = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        inserted = row.get("insert")
        if isinstance(inserted, list):
            for inner, item in enumerate(inserted):
                if isinstance(item, dict) and item.get("id") == row_id:
                    found.append((index, inner, "config" in item))
        elif row.get("id") == row_id:
            found.append((index, None, "config" in row))
    with_config = [f for f in found if f[2]]
    candidates = with_config or found
    return (candidates[-1][0], candidates[-1][1]) if candidates else None


def find_row(doc: PatchDocument, row_id: str) -> PatchRow | None:
    """The row of ``doc`` that sets ``row_id``'s config (see :func:`set_row_config`)."""
    where = _locate(doc.rows, row_id)
    if where is None:
        return None
    index, inner = where
    data = doc.rows[index] if inner is None else doc.rows[index]["insert"][inner]
    return PatchRow(row_id, "top" if inner is None else "insert", index, inner, data)


def row_config(doc: PatchDocument, row_id: str) -> dict[str, Any] | None:
    """The ``config`` this file gives ``row_id`` (``None``: the file sets none)."""
    row = find_row(doc, row_id)
    return None if row is None else row.config


# --- emitting --------------------------------------------------------------------------

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


def _emit_mapping(mapping: Mapping[str, Any], indent: int, newline: str) -> str:
    """``mapping`` in block style, its first line unindented, the rest at ``indent``."""
    stream = io.StringIO()
    _emitter().dump(_yaml_value(mapping), stream)
    lines = stream.getvalue().rstrip("\n").split("\n")
    return newline.join(
        [lines[0], *((" " * indent + line) if line else line for line in lines[1:])]
    )


def _emit_entry(key: str, value: Any, indent: int, newline: str) -> str:
    return _emit_mapping({key: value}, indent, newline)


# --- splicing --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class _Edit:
    start: int
    end: int
    text: str


def _is_empty(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.value == "" and node.style is None


def _end(node: Node, text: str) -> int:
    """Index just past the node's own text (block collections end at their last leaf)."""
    if isinstance(node, ScalarNode):
        end = int(node.end_mark.index)
        if node.style in ("|", ">"):
            end = len(text[:end].rstrip())
        return end
    if getattr(node, "flow_style", False) or not node.value:
        return int(node.end_mark.index)
    if isinstance(node, MappingNode):
        key, value = node.value[-1]
        return _entry_end(key, value, text)
    return _end(node.value[-1], text)


def _entry_end(key: Node, value: Node, text: str) -> int:
    if _is_empty(value):  # its mark sits on the next token, maybe lines below
        return text.index(":", _end(key, text)) + 1
    return max(_end(key, text), _end(value, text))


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _after_line(text: str, index: int) -> int:
    """Index just past the line break that ends the line holding ``index``."""
    newline = text.find("\n", index)
    return len(text) if newline == -1 else newline + 1


def _first_on_line(text: str, index: int) -> bool:
    return text[_line_start(text, index) : index].strip() == ""


def _plain(node: Node) -> Any:
    return _loader().constructor.construct_document(node)


def _same(a: Any, b: Any) -> bool:
    """Equal as DSH would see them (1 == 1.0, but never True == 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _config_edits(
    text: str, key: Node, value: Node, next_key: Node | None, config: Mapping[str, Any], nl: str
) -> list[_Edit]:
    """Edits that turn an existing ``config:`` entry into ``config``."""
    entry_end = _entry_end(key, value, text)
    if not config:
        if _first_on_line(text, key.start_mark.index):
            start = _line_start(text, key.start_mark.index)
            return [_Edit(start, _after_line(text, entry_end), "")]
        if next_key is None:  # `- config: …` alone on the row's first line
            raise PatchError("the row has nothing but its config; remove it by hand")
        return [_Edit(key.start_mark.index, next_key.start_mark.index, "")]
    if not isinstance(value, MappingNode) or value.flow_style or not value.value:
        replacement = _emit_entry("config", dict(config), key.start_mark.column, nl)
        return [_Edit(key.start_mark.index, entry_end, replacement)]
    edits: list[_Edit] = []
    present: set[str] = set()
    column = value.value[0][0].start_mark.column
    for item_key, item_value in value.value:
        name = _plain(item_key)
        present.add(name)
        end = _entry_end(item_key, item_value, text)
        if name not in config:
            start = _line_start(text, item_key.start_mark.index)
            edits.append(_Edit(start, _after_line(text, end), ""))
        elif not _same(_plain(item_value), config[name]):
            replacement = _emit_entry(name, config[name], column, nl)
            edits.append(_Edit(item_key.start_mark.index, end, replacement))
    added = [k for k in config if k not in present]
    if added:
        at = _after_line(text, entry_end)
        lead = "" if text[:at].endswith("\n") else nl
        block = nl.join(" " * column + _emit_entry(k, config[k], column, nl) for k in added)
        edits.append(_Edit(at, at, lead + block + nl))
    return edits


def _row_edits(
    text: str, row: Node, row_id: str, config: Mapping[str, Any], nl: str
) -> list[_Edit]:
    if not isinstance(row, MappingNode):
        raise PatchError(f"row {row_id!r} is not a mapping")
    if row.flow_style:
        data = {k: v for k, v in _plain(row).items() if k != "config"}
        if config:
            data["config"] = dict(config)
        replacement = _emit_mapping(data, row.start_mark.column, nl)
        return [_Edit(row.start_mark.index, row.end_mark.index, replacement)]
    for position, (key, value) in enumerate(row.value):
        if _plain(key) == "config":
            following = row.value[position + 1][0] if position + 1 < len(row.value) else None
            return _config_edits(text, key, value, following, config, nl)
    if not config:
        return []
    at = _after_line(text, _end(row, text))
    lead = "" if text[:at].endswith("\n") else nl
    column = row.value[0][0].start_mark.column
    entry = " " * column + _emit_entry("config", dict(config), column, nl)
    return [_Edit(at, at, lead + entry + nl)]


def _new_row(row_id: str, config: Mapping[str, Any], insert_name: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"id": row_id}
    if insert_name is not None:
        row["name"] = insert_name
    if config:
        row["config"] = dict(config)
    return {"insert": [row]} if insert_name is not None else row


def _dash_column(text: str, item: Node) -> int:
    start = _line_start(text, item.start_mark.index)
    dash = text.rfind("-", start, item.start_mark.index)
    return dash - start if dash != -1 else max(0, item.start_mark.column - 2)


def _append_edits(text: str, root: Node | None, new_row: dict[str, Any], nl: str) -> list[_Edit]:
    if root is not None and not (isinstance(root, SequenceNode) and root.value):
        if isinstance(root, SequenceNode) and not root.flow_style:
            raise PatchError("the file's list has an unexpected shape; add the row by hand")
        # `[]` (or an explicit null): the new row takes its place
        column = root.start_mark.column
        block = "- " + _emit_mapping(new_row, column + 2, nl)
        return [_Edit(root.start_mark.index, _end(root, text), block)]
    if isinstance(root, SequenceNode) and root.flow_style:
        raise PatchError("the file is a one-line [ … ] list; add the row by hand")
    column = _dash_column(text, root.value[0]) if isinstance(root, SequenceNode) else 0
    block = " " * column + "- " + _emit_mapping(new_row, column + 2, nl)
    lead = "" if text == "" or text.endswith("\n") else nl
    if isinstance(root, SequenceNode) and not (text + lead).endswith(nl + nl):
        lead += nl
    return [_Edit(len(text), len(text), lead + block + nl)]


def _apply(text: str, edits: list[_Edit]) -> str:
    for edit in sorted(edits, reverse=True):
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text


def set_row_config(
    text: str, row_id: str, config: Mapping[str, Any], *, insert_name: str | None = None
) -> str:
    """``text`` with ``row_id``'s ``config`` replaced by ``config`` (empty: no ``config:``).

    ``config`` is the complete desired config: a patch ``config`` replaces the row's
    whole config. The row edited is the last one in the file that has a ``config``,
    else the last one naming ``row_id`` (a top-level ``- id:`` row or one inside an
    ``- insert:`` list). With no such row, one is appended: inside a new ``- insert:``
    when ``insert_name`` is given (a plugin that no bundle assembles, like
    ``dsh-context-truth``; give it only when the composed tree lacks the row, or the
    plugin is mounted twice), else as ``- id: <row_id>`` overriding a bundle's row.
    """
    nl = "\r\n" if "\r\n" in text else "\n"
    before = _parse(text)
    where = _locate(before.rows, row_id)
    if where is None:
        new_row = _new_row(row_id, config, insert_name)
        edits = _append_edits(text, before.root, new_row, nl)
        expected = [*before.rows, _plain_copy(new_row)]
    else:
        if not isinstance(before.root, SequenceNode):  # rows were found, so it is one
            raise PatchError("the file is not a YAML list of patch rows")
        index, inner = where
        node = before.root.value[index]
        if inner is not None:
            node = dict((_plain(k), v) for k, v in node.value)["insert"].value[inner]
        edits = _row_edits(text, node, row_id, config, nl)
        expected = _with_config(before.rows, index, inner, config)
    after = _apply(text, edits)
    got = _parse(after).rows
    if not _same(list(got), expected):
        raise PatchError(f"editing {row_id!r} would change more than its config; not saved")
    return after


def _plain_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_copy(v) for v in value]
    return value


def _with_config(
    rows: Sequence[Any], index: int, inner: int | None, config: Mapping[str, Any]
) -> list[Any]:
    expected = _plain_copy(list(rows))
    row = expected[index] if inner is None else expected[index]["insert"][inner]
    row.pop("config", None)
    if config:
        row["config"] = _plain_copy(config)
    return list(expected)


# --- writing ---------------------------------------------------------------------------


def _current(path: Path) -> tuple[bytes, bool]:
    try:
        return path.read_bytes(), True
    except FileNotFoundError:
        return b"", False


def write_patch_atomically(path: Path, new_text: str, *, expected_sha256: str) -> None:
    """Replace ``path`` with ``new_text`` unless it changed since it was read.

    A symlinked file is written through to its target. The new file keeps the old
    one's mode (0644 when created); it appears whole or not at all (temp file in the
    same folder, fsync, ``os.replace``, fsync of the folder); a failed write leaves no
    temp file. The sha256 is checked again just before the swap, so only a writer
    racing inside that last instant can be missed.
    """
    target = Path(os.path.realpath(path))
    current, exists = _current(target)
    _check_unchanged(path, current, expected_sha256)
    mode = stat.S_IMODE(target.stat().st_mode) if exists else NEW_FILE_MODE
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(new_text.encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp_name, mode)
        _check_unchanged(path, _current(target)[0], expected_sha256)
        os.replace(temp_name, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    with suppress(OSError):  # the file is in place; this only hastens the rename to disk
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _check_unchanged(path: Path, current: bytes, expected_sha256: str) -> None:
    sha = _sha256(current)
    if sha != expected_sha256:
        text = current.decode("utf-8", errors="replace")
        raise PatchConflict(path, current_text=text, current_sha256=sha)


def unified_diff(before: str, after: str, name: str) -> str:
    """A ``diff -u`` of two texts of the file ``name`` ("" when they are equal)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
