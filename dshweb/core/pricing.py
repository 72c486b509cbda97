"""DSH's token pricing heuristic, exactly as the host computes it (DSH_FACTS §5).

Lengths are JavaScript string lengths (UTF-16 code units) and ``JSON(x)`` is
``JSON.stringify``: compact, key order kept, non-ASCII unescaped. Logs must be parsed
with :func:`loads_js` so that numbers print back as JavaScript prints them.
"""

from __future__ import annotations

import json
from typing import Any

_JS_SAFE = 2**53
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def _js_float(text: str) -> float | int:
    value = float(text)
    if value.is_integer() and abs(value) < _JS_SAFE:
        return int(value)
    return value


_decoder = json.JSONDecoder(parse_float=_js_float)


def loads_js(line: str | bytes) -> Any:
    """``json.loads`` that keeps integral numbers integral, as JavaScript does (``1.0`` → 1)."""
    text = line.decode() if isinstance(line, bytes) else line
    return _decoder.decode(text)


def js_len(text: str) -> int:
    """JavaScript ``.length``: code points beyond the BMP count twice."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def json_len(value: Any) -> int:
    """``JSON.stringify(value).length``."""
    return js_len(_dumps(value))


def _ceil4(n: int) -> int:
    return -(-n // 4)


def block_tokens(block: Any) -> int:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind in ("text", "reasoning"):
        return _ceil4(js_len(str(block.get("text", "")))) + 4
    if kind == "tool-call":
        return (
            _ceil4(js_len(str(block.get("name", ""))))
            + _ceil4(js_len(str(block.get("arguments", ""))))
            + 4
        )
    if kind == "image" and "offloaded" in block:
        block = {k: v for k, v in block.items() if k != "offloaded"}
    return 4 + _ceil4(json_len(block))


def _block_chars(block: Any) -> int:
    if isinstance(block, dict) and block.get("type") == "text":
        return js_len(str(block.get("text", "")))
    return json_len(block)


def message_tokens(message: Any) -> int:
    """Price of one surface message (system messages have their own rule)."""
    if not isinstance(message, dict):
        return 0
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not content:
        return 0 if message.get("role") in ("system", "developer", "assistant") else 4
    if message.get("role") == "system":
        return _ceil4(sum(_block_chars(b) for b in content)) + 4
    return sum(block_tokens(b) for b in content) + 4


def canonical_header(header: Any) -> dict[str, Any]:
    """The request header as the meter compares it: config, marked defaults, tools."""
    if not isinstance(header, dict):
        return {}
    canonical: dict[str, Any] = {"config": header.get("config")}
    defaults = header.get("adapterDefaults")
    if isinstance(defaults, dict) and (
        defaults.get("reasoningEffort") is True or defaults.get("maxTokens") is True
    ):
        canonical["adapterDefaults"] = defaults
    tools = header.get("tools")
    if tools:
        canonical["tools"] = tools
    return canonical


def tools_tokens(header: Any) -> int:
    """Price of a request header's tool schemas: 0 without tools."""
    tools = canonical_header(header).get("tools")
    return _ceil4(json_len(tools)) + 4 if tools else 0
