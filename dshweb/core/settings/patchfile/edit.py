"""Splicing one row's ``config`` into a patch file's text, every other byte kept.

Contract: :func:`set_row_config` changes only the target row's ``config:`` entry
(inside a block mapping, only the keys whose value changed; comments, blank lines,
quoting and line breaks elsewhere stay), or appends a row when the file has none for
the id. The result is parsed again and compared with the old rows; if anything but
that config would change, it raises :class:`PatchError` instead of returning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from dshweb.core.profile.dshyaml import construct
from dshweb.core.profile.patch import PatchError, locate_row, parse_patch
from dshweb.core.settings.patchfile.emit import emit_entry, emit_mapping


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
    return construct(node)


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
        replacement = emit_entry("config", dict(config), key.start_mark.column, nl)
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
            replacement = emit_entry(name, config[name], column, nl)
            edits.append(_Edit(item_key.start_mark.index, end, replacement))
    added = [k for k in config if k not in present]
    if added:
        at = _after_line(text, entry_end)
        lead = "" if text[:at].endswith("\n") else nl
        block = nl.join(" " * column + emit_entry(k, config[k], column, nl) for k in added)
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
        replacement = emit_mapping(data, row.start_mark.column, nl)
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
    entry = " " * column + emit_entry("config", dict(config), column, nl)
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
        block = "- " + emit_mapping(new_row, column + 2, nl)
        return [_Edit(root.start_mark.index, _end(root, text), block)]
    if isinstance(root, SequenceNode) and root.flow_style:
        raise PatchError("the file is a one-line [ … ] list; add the row by hand")
    column = _dash_column(text, root.value[0]) if isinstance(root, SequenceNode) else 0
    block = " " * column + "- " + emit_mapping(new_row, column + 2, nl)
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
    before = parse_patch(text, empty_ok=True)
    where = locate_row(before.rows, row_id)
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
    got = parse_patch(after).rows
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
