"""The host's pricing heuristic, case by case (DSH_FACTS §5)."""

from __future__ import annotations

from typing import Any

import pytest

from dshweb.core.pricing import (
    block_tokens,
    canonical_header,
    js_len,
    json_len,
    loads_js,
    message_tokens,
    tools_tokens,
)


@pytest.mark.parametrize(
    ("text", "length"),
    [("", 0), ("abc", 3), ("数据", 2), ("😀", 2), ("𠀀𪚥", 4), ("a😀b", 4)],
)
def test_js_length_counts_utf16_units(text: str, length: int) -> None:
    assert js_len(text) == length


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": 1, "b": [1, 2]}, '{"a":1,"b":[1,2]}'),
        ({"z": 1, "a": 2}, '{"z":1,"a":2}'),
        ({"t": "数"}, '{"t":"数"}'),
        ({"n": "a\nb"}, '{"n":"a\\nb"}'),
    ],
)
def test_json_length_is_json_stringify(value: Any, text: str) -> None:
    assert json_len(value) == len(text)


def test_integral_floats_print_like_javascript() -> None:
    assert loads_js('{"x":1.0,"y":2.5}') == {"x": 1, "y": 2.5}
    assert json_len(loads_js('{"x":1.0}')) == len('{"x":1}')


@pytest.mark.parametrize(
    ("block", "tokens"),
    [
        ({"type": "text", "text": "abcd"}, 1 + 4),
        ({"type": "text", "text": "abcde"}, 2 + 4),
        ({"type": "reasoning", "text": "😀😀"}, 1 + 4),
        ({"type": "text", "text": ""}, 4),
        (
            {"type": "tool-call", "id": "t1", "name": "bash", "arguments": '{"command":"ls"}'},
            1 + 4 + 4,
        ),
        (
            {"type": "image", "data": "QUJD", "offloaded": {"path": "/tmp/x"}},
            4 + -(-len('{"type":"image","data":"QUJD"}') // 4),
        ),
        ({"type": "tool-result", "value": 1}, 4 + -(-len('{"type":"tool-result","value":1}') // 4)),
    ],
)
def test_block_prices(block: dict[str, Any], tokens: int) -> None:
    assert block_tokens(block) == tokens


def test_message_is_blocks_plus_four() -> None:
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "abcd"}, {"type": "text", "text": "ab"}],
    }
    assert message_tokens(message) == (1 + 4) + (1 + 4) + 4


def test_system_message_has_no_per_block_overhead() -> None:
    message = {
        "role": "system",
        "content": [{"type": "text", "text": "a" * 10}, {"type": "text", "text": "b" * 7}],
    }
    assert message_tokens(message) == -(-17 // 4) + 4


@pytest.mark.parametrize("role", ["system", "assistant", "developer"])
def test_empty_content_costs_nothing(role: str) -> None:
    assert message_tokens({"role": role, "content": []}) == 0


def test_tools_price_uses_canonical_header() -> None:
    tools = [{"name": "bash", "description": "run", "parameters": {"type": "object"}}]
    header = {
        "config": {"model": "m"},
        "adapterDefaults": {"reasoningEffort": False},
        "tools": tools,
    }
    assert canonical_header(header) == {"config": {"model": "m"}, "tools": tools}
    assert tools_tokens(header) == -(-json_len(tools) // 4) + 4
    assert tools_tokens({"config": {}, "tools": []}) == 0
    kept = canonical_header({"config": {}, "adapterDefaults": {"maxTokens": True}})
    assert kept == {"config": {}, "adapterDefaults": {"maxTokens": True}}
