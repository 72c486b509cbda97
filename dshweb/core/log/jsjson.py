"""JSON as JavaScript sees it: string lengths, number text and ``JSON.stringify``.

DSH prices text by its JavaScript length (UTF-16 code units) and structured values by the
length of ``JSON.stringify`` (compact, key order kept, non-ASCII unescaped, lone
surrogates escaped, integral numbers without ``.0``). :func:`loads_js` parses a line so
that :func:`js_stringify` prints it back as the host printed it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_JS_SAFE = 2**53
_dumps_str = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` safe to show, to encode as UTF-8 and to store in any database: a lone
    surrogate (valid in a JavaScript string, not in UTF-8) and a NUL (which PostgreSQL's
    text cannot hold) become U+FFFD."""
    if "\0" not in text and (text.isascii() or not _LONE_SURROGATE.search(text)):
        return text
    return _UNSTORABLE.sub("\ufffd", text)


def js_len(text: str) -> int:
    """JavaScript ``.length``: code points beyond the BMP count twice."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


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


def js_number(value: float) -> str:
    """``JSON.stringify`` of a number (``Number.prototype.toString``; non-finite → null)."""
    if isinstance(value, int):
        if abs(value) < 10**21:
            return str(value)
        value = float(value)
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        power = n - 1
        mark = f"e{'+' if power >= 0 else '-'}{abs(power)}"
        text = (digits if k == 1 else digits[0] + "." + digits[1:]) + mark
    return sign + text


def _js_string(text: str) -> str:
    encoded = _dumps_str(text)
    if not text.isascii() and _LONE_SURROGATE.search(text):
        encoded = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)
    return encoded


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for parsed JSON values."""
    if isinstance(value, str):
        return _js_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(f"{_js_string(str(k))}:{js_stringify(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_stringify(v) for v in value) + "]"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def json_len(value: Any) -> int:
    """``JSON.stringify(value).length``."""
    return js_len(js_stringify(value))
