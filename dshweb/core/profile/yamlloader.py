"""PyYAML's scanner and parser taught js-yaml's rules (:mod:`dshweb.core.profile.dshyaml`).

Apart from :mod:`~dshweb.core.profile.dshyaml` so that only a command that reads YAML
imports PyYAML: :func:`~dshweb.core.profile.dshyaml.compose_yaml` and
:func:`~dshweb.core.profile.dshyaml.construct` import this module when first called.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from dshweb.core.profile.dshyaml import (
    _PLAIN,
    _Y,
    MAX_DEPTH,
    MAX_VALUES,
    _error,
    _js_order,
    _key,
    _tagged,
    resolve_plain,
)


class Loader(yaml.SafeLoader):
    """PyYAML's scanner and parser, with js-yaml's tags, anchors and depth limit."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    # js-yaml takes a tab as separating space anywhere but in a line's indentation;
    # PyYAML takes none. These two scanner steps are PyYAML's with that one change.

    def _tab_is_space(self) -> bool:
        start = self.buffer.rfind("\n", 0, self.pointer) + 1
        if self.buffer[start : self.pointer].strip(" \t"):
            return True  # after something on this line
        end = self.buffer.find("\n", self.pointer)
        rest = self.buffer[self.pointer : end if end != -1 else len(self.buffer)]
        return rest.strip(" \t\0\r").startswith("#") or not rest.strip(" \t\0\r")

    def scan_to_next_token(self) -> None:
        if self.index == 0 and self.peek() == "\ufeff":
            self.forward()
        while True:
            while self.peek() == " " or (self.peek() == "\t" and self._tab_is_space()):
                self.forward()
            if self.peek() == "#":
                while self.peek() not in "\0\r\n\x85\u2028\u2029":
                    self.forward()
            if not self.scan_line_break():  # type: ignore[no-untyped-call]
                return
            if not self.flow_level:
                self.allow_simple_key = True

    def scan_plain_spaces(self, indent: int, start_mark: Any) -> list[str] | None:
        length = 0
        while self.peek(length) in " \t":
            length += 1
        if length and self.peek(length) not in "\r\n\x85\u2028\u2029":
            whitespaces = self.prefix(length)
            self.forward(length)
            return [whitespaces]
        return super().scan_plain_spaces(indent, start_mark)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _Y + "str"  # quoted or "!": a string
        return _Y + ("seq" if kind is SequenceNode else "map")

    def compose_scalar_node(self, anchor: Any) -> ScalarNode:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        node = super().compose_scalar_node(anchor)
        if event.tag == "!":  # the non-specific tag: a string, never resolved
            node.tag = _Y + "str"
        return node

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(AliasEvent):  # an alias costs no depth
            event = self.get_event()  # type: ignore[no-untyped-call]
            if event.anchor not in self.anchors:
                raise _error(f'unidentified alias "{event.anchor}"', event.end_mark)
            return self.anchors[event.anchor]
        event = self.peek_event()  # type: ignore[no-untyped-call]
        # js-yaml charges one more level for a scalar or flow collection read where a
        # block collection could start: the root, a block sequence item, a block mapping
        # value on a new line.
        block = isinstance(event, SequenceStartEvent | MappingStartEvent) and not event.flow_style
        extra = 0
        if not block:
            if parent is None:
                extra = 1
            elif not getattr(parent, "flow_style", False):
                if isinstance(parent, SequenceNode):
                    extra = 1
                elif isinstance(index, Node):
                    extra = int(event.start_mark.line > index.end_mark.line)
        if self.depth + 1 + extra > MAX_DEPTH:
            raise _error(f"nesting exceeded maxDepth ({MAX_DEPTH})", event.start_mark)
        self.depth += 1 + extra
        try:
            if event.anchor is not None:
                self.anchors.pop(event.anchor, None)  # an anchor may be redefined
            if self.check_event(ScalarEvent):
                return self.compose_scalar_node(event.anchor)
            if self.check_event(SequenceStartEvent):
                return self.compose_sequence_node(event.anchor)
            return self.compose_mapping_node(event.anchor)
        finally:
            self.depth -= 1 + extra


def _construct(node: Node, done: dict[int, Any], path: set[int]) -> Any:
    if id(node) in path:
        raise _error("circular structure (an alias inside its own anchor)", node.start_mark)
    if id(node) in done:
        return done[id(node)]
    if isinstance(node, ScalarNode):
        if node.tag == _PLAIN:
            return resolve_plain(node.value)
        empty = node.style is None and node.value == ""
        return _tagged(node.tag, None if empty else node.value, node)
    kind = "seq" if isinstance(node, SequenceNode) else "map"
    if node.tag != _Y + kind:
        raise _error(f"unknown tag !<{node.tag}>", node.end_mark)
    path.add(id(node))
    try:
        if isinstance(node, SequenceNode):
            value: Any = [_construct(item, done, path) for item in node.value]
        else:
            assert isinstance(node, MappingNode)
            mapping: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = _key(_construct(key_node, done, path), key_node.end_mark)
                if key in mapping:
                    raise _error("duplicated mapping key", key_node.start_mark)
                mapping[key] = _construct(value_node, done, path)
            value = _js_order(mapping)
    finally:
        path.discard(id(node))
    done[id(node)] = value
    return value


def _expanded(node: Node, sizes: dict[int, int], path: set[int]) -> int:
    """How many values ``node`` stands for once every alias is expanded."""
    found = sizes.get(id(node))
    if found is not None:
        return found
    if id(node) in path:
        raise _error("circular structure (an alias inside its own anchor)", node.start_mark)
    size = 1
    if isinstance(node, SequenceNode | MappingNode):
        path.add(id(node))
        children = node.value if isinstance(node, SequenceNode) else sum(node.value, ())
        for child in children:
            size += _expanded(child, sizes, path)
            if size > MAX_VALUES:
                raise _error(
                    f"aliases expand this document past {MAX_VALUES} values", node.start_mark
                )
        path.discard(id(node))
    sizes[id(node)] = size
    return size


def construct_node(node: Node) -> Any:
    """:func:`~dshweb.core.profile.dshyaml.construct`."""
    _expanded(node, {}, set())
    return _construct(node, {}, set())
