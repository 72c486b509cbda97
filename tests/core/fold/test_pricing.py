"""The host's pricing heuristic, case by case (DSH_FACTS §5), on both decoding paths."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshweb.core.fold.pricing import (
    DENSE,
    PRUNE_MARKER,
    PruneCut,
    TextRun,
    TextShape,
    header_key,
    message_price,
    message_tokens,
    priced_message,
    pruned_price,
    shape_points,
    shape_price,
    tool_calls,
    tools_tokens,
)
from dshweb.core.log.decode import decode_event
from dshweb.core.log.jsjson import js_len, js_number, js_stringify, json_len, loads_js
from dshweb.core.log.structs import HAVE_MSGSPEC
from dshweb.core.log.wire import Header, Message, RequestHeader, UserMessage

PATHS = [pytest.param(True, id="msgspec"), pytest.param(False, id="stdlib")]
if not HAVE_MSGSPEC:  # pragma: no cover - the suite installs msgspec
    PATHS = PATHS[1:]


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def _message(message: dict[str, Any], fast: bool) -> Message:
    line = _line({"type": "user/message", "seq": 0, "data": message, "surfaceOp": "append"})
    event = decode_event(line, fast=fast)
    assert isinstance(event, UserMessage) and event.data is not None
    return event.data


def _header(header: dict[str, Any], fast: bool) -> Header | None:
    event = decode_event(_line({"type": "request/header", "data": {"header": header}}), fast=fast)
    assert isinstance(event, RequestHeader) and event.data is not None
    return event.data.header


@pytest.mark.parametrize(
    ("text", "length"),
    [("", 0), ("abc", 3), ("数据", 2), ("😀", 2), ("𠀀𪚥", 4), ("a😀b", 4), ("\ud800", 1)],
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
        ({"s": "x\ud800"}, '{"s":"x\\ud800"}'),
        ([True, None, False, 2.5], "[true,null,false,2.5]"),
    ],
)
def test_json_text_is_json_stringify(value: Any, text: str) -> None:
    assert js_stringify(value) == text
    assert json_len(value) == len(text)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (2.5, "2.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (0.00001, "0.00001"),
        (1e-6, "0.000001"),
        (123.456, "123.456"),
        (-1.25e22, "-1.25e+22"),
        (float("inf"), "null"),
    ],
)
def test_numbers_print_like_javascript(number: float, text: str) -> None:
    assert js_number(number) == text


def test_integral_floats_parse_like_javascript() -> None:
    assert loads_js('{"x":1.0,"y":2.5}') == {"x": 1, "y": 2.5}
    assert json_len(loads_js('{"x":1.0}')) == len('{"x":1}')


@pytest.mark.parametrize("fast", PATHS)
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
        (
            {"type": "tool-addition", "toolName": "数"},
            4 + -(-len('{"type":"tool-addition","toolName":"数"}') // 4),
        ),
    ],
)
def test_block_prices(block: dict[str, Any], tokens: int, fast: bool) -> None:
    assert message_tokens(_message({"role": "user", "content": [block]}, fast)) == tokens + 4


@pytest.mark.parametrize("fast", PATHS)
def test_message_is_blocks_plus_four(fast: bool) -> None:
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "abcd"}, {"type": "text", "text": "ab"}],
    }
    assert message_price(_message(message, fast)) == ((1 + 4) + (1 + 4) + 4, "abcd ab")


@pytest.mark.parametrize("fast", PATHS)
def test_string_content_is_one_text_block(fast: bool) -> None:
    assert message_price(_message({"role": "user", "content": "abcde"}, fast)) == (
        2 + 4 + 4,
        "abcde",
    )


@pytest.mark.parametrize("fast", PATHS)
def test_system_message_has_no_per_block_overhead(fast: bool) -> None:
    message = {
        "role": "system",
        "content": [{"type": "text", "text": "a" * 10}, {"type": "text", "text": "b" * 7}],
    }
    assert message_tokens(_message(message, fast)) == -(-17 // 4) + 4


@pytest.mark.parametrize("fast", PATHS)
@pytest.mark.parametrize("role", ["system", "assistant", "developer"])
def test_empty_content_costs_nothing(role: str, fast: bool) -> None:
    assert message_tokens(_message({"role": role, "content": []}, fast)) == 0


@pytest.mark.parametrize("fast", PATHS)
def test_tools_price_and_the_canonical_header(fast: bool) -> None:
    tools = [{"name": "bash", "description": "run", "parameters": {"type": "object"}}]
    header = _header(
        {"config": {"model": "m"}, "adapterDefaults": {"reasoningEffort": False}, "tools": tools},
        fast,
    )
    assert tools_tokens(header) == -(-json_len(tools) // 4) + 4
    assert tools_tokens(_header({"config": {}, "tools": []}, fast)) == 0
    # unmarked adapter defaults are not part of the canonical header; marked ones are
    same = _header({"config": {"model": "m"}, "tools": tools}, fast)
    assert header_key(header) == header_key(same)
    marked = _header(
        {"config": {"model": "m"}, "adapterDefaults": {"maxTokens": True}, "tools": tools}, fast
    )
    assert header_key(marked) != header_key(same)
    assert header_key(_header({"config": {"model": "n"}, "tools": tools}, fast)) != header_key(same)


def _prune_content(blocks: list[dict[str, Any]], cut: PruneCut) -> list[dict[str, Any]] | None:
    """``ToolResultPruner.pruneContent`` as the runtime writes it, on code points."""
    total = sum(len(b["text"]) for b in blocks if b["type"] == "text")
    if total <= cut.threshold:
        return None
    removed_start, removed_end = cut.head, total - cut.tail
    pruned, consumed, marked = [], 0, False
    for block in blocks:
        if block["type"] != "text":
            pruned.append(block)
            continue
        points = block["text"]
        start, end = consumed, consumed + len(points)
        head_end = min(len(points), max(0, removed_start - start))
        tail_start = min(len(points), max(0, removed_end - start))
        marker = ""
        if start < removed_end and end > removed_start and not marked:
            marker, marked = PRUNE_MARKER, True
        text = points[:head_end] + marker + points[tail_start:]
        if text:
            pruned.append({**block, "text": text})
        consumed = end
    return pruned


ALPHABET = "ab c\n数据😀𠀀"


@pytest.mark.parametrize("fast", PATHS)
@given(
    texts=st.lists(st.text(ALPHABET, max_size=300), min_size=1, max_size=4),
    image=st.booleans(),
    head=st.integers(0, 120),
    tail=st.integers(0, 120),
    spare=st.integers(0, 200),
)
@settings(max_examples=150, deadline=None)
def test_a_result_kept_as_its_shape_is_priced_as_the_pruner_would_leave_it(
    fast: bool, texts: list[str], image: bool, head: int, tail: int, spare: int
) -> None:
    """The shape kept instead of the text prices any cut exactly as the pruned content
    the runtime would write, for text of astral and CJK characters in several blocks."""
    cut = PruneCut(head + len(PRUNE_MARKER) + tail + spare, head, tail)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    if image:
        blocks.insert(1, {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"})
    message = _message({"role": "tool", "content": blocks}, fast)
    price, _, shape, calls = priced_message(message, shape=True)
    assert price == message_price(message)[0]
    assert calls == tool_calls(message)
    after = _prune_content(blocks, cut)
    points = sum(map(len, texts))
    if shape is None:
        assert points <= len(PRUNE_MARKER)
        return
    assert shape_points(shape) == points and shape_price(shape) == price
    if after is None:
        assert pruned_price(shape, cut) is None
    else:
        assert (
            pruned_price(shape, cut)
            == message_price(_message({"role": "tool", "content": after}, fast))[0]
        )


@pytest.mark.parametrize("fast", PATHS)
@given(st.lists(st.integers(0, 0x10FFFF), max_size=200).map(lambda cps: "".join(map(chr, cps))))
@settings(max_examples=300, deadline=None)
def test_a_text_runs_positions_past_the_bmp_are_the_characters_past_it(
    fast: bool, text: str
) -> None:
    """Its positions past the BMP: each character from U+10000 up, none else (a lone
    surrogate, U+D800 to U+DFFF, is in the BMP); the text's UTF-16 length from them."""
    text = "p" * 64 + text  # long enough for a pruner to cut: its shape is kept
    record = {"role": "tool", "content": [{"type": "text", "text": text}]}
    line = json.dumps({"type": "user/message", "seq": 0, "data": record, "surfaceOp": "append"})
    event = decode_event(line.encode(), fast=fast)  # a lone surrogate as JSON writes it: \ud800
    assert isinstance(event, UserMessage) and event.data is not None
    _, _, shape, _ = priced_message(event.data, shape=True)
    wide = [i for i, c in enumerate(text) if ord(c) >= 0x10000]
    if not isinstance(shape, TextShape):  # one text block in the BMP: its length alone
        assert shape == len(text) and wide == []
        return
    (run,) = shape.runs
    assert isinstance(run, TextRun)
    assert [at for at in range(run.points) if run.units(at, at + 1) == 2] == wide and wide != []
    dense = len(wide) * DENSE >= len(text)
    assert isinstance(run.astral, bytes) == dense  # hypothesis makes both kinds
    for start in range(0, len(text), 7):
        for end in (start, start + 1, (start + len(text)) // 2, len(text)):
            utf16 = len(text[start:end].encode("utf-16-le", "surrogatepass")) // 2
            assert run.units(start, end) == utf16
