"""DSH's token pricing heuristic, exactly as the host computes it (DSH_FACTS §5).

Lengths are JavaScript string lengths (UTF-16 code units); a block priced by its JSON is
priced by the host's own JSON text of it (:func:`~dshweb.core.log.decode.raw_length`).
Prices are read off wire records (:mod:`dshweb.core.log.wire`), never off re-encoded values.
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass
from typing import Any

from dshweb.core.log.decode import raw_as, raw_key, raw_length, raw_present, raw_value
from dshweb.core.log.jsjson import js_len, json_len
from dshweb.core.log.wire import AdapterDefaults, Block, Header, HeaderConfig, Message
from dshweb.core.profile.plugins import PRUNE_MARKER as PRUNE_MARKER
from dshweb.core.profile.pruner import DEFAULT_CUT as DEFAULT_CUT
from dshweb.core.profile.pruner import PruneCut as PruneCut

# The pruner's cut and marker are defined once, in core/profile (the settings read them);
# they are re-exported here for the fold's modules, which price with them.

PREVIEW_CHARS = 80
_EMPTY_TOOLS = frozenset({b"[]", b"null", b"false", b'""', b"0", b"{}"})


def _ceil4(n: int) -> int:
    return -(-n // 4)


def block_tokens(raw: Any, block: Block | None) -> int:
    """Price of one content block (``block`` is ``raw`` decoded, ``None`` if not an object)."""
    kind = block.type if block is not None else None
    if block is not None and (kind == "text" or kind == "reasoning"):
        return _ceil4(js_len(block.text or "")) + 4
    if block is not None and kind == "tool-call":
        return _ceil4(js_len(block.name or "")) + _ceil4(js_len(block.arguments or "")) + 4
    if kind == "image":
        value = raw_value(raw)
        if isinstance(value, dict) and "offloaded" in value:
            return 4 + _ceil4(json_len({k: v for k, v in value.items() if k != "offloaded"}))
    return 4 + _ceil4(raw_length(raw))


def message_price(message: Message | None) -> tuple[int, str]:
    """Price of one surface message (system messages have their own rule) and the first
    :data:`PREVIEW_CHARS` characters of its text, whitespace folded."""
    price, preview, _, _ = priced_message(message, shape=False)
    return price, preview


def priced_message(message: Message | None, *, shape: bool) -> tuple[int, str, Shape | None, int]:
    """:func:`message_price`, and with ``shape`` (a tool result's) the :data:`Shape` of
    its text as the pruner measures it (``None``: too short for any pruner to cut, or
    not a list of blocks), and its :func:`tool_calls`, from the same pass over its
    blocks (each block is decoded once)."""
    if message is None:
        return 0, "", None, 0
    content = message.content
    if isinstance(content, str):
        text = content
        chars = js_len(text)
        price = (_ceil4(chars) + 4) + 4 if message.role != "system" else _ceil4(chars) + 4
        return price, text[:PREVIEW_CHARS], None, 0
    if not content:
        return (0 if message.role in ("system", "developer", "assistant") else 4), "", None, 0
    system = message.role == "system"
    total = 0
    parts: list[str] = []
    size = 0
    runs: list[int | TextRun] | None = [] if shape else None
    points = 0
    calls = 0
    for raw in content:
        block = raw_as(raw, Block)
        if block is not None and block.type == "tool-call":
            calls += 1
        if system:
            is_text = block is not None and block.type == "text"
            total += js_len(block.text or "") if is_text and block is not None else raw_length(raw)
        elif runs is not None and block is not None and block.type == "text":
            text = block.text or ""
            units, length = js_len(text), len(text)  # a Python string's length: code points
            total += _ceil4(units) + 4
            runs.append(TextRun(length, _astral(text, units - length) if units != length else ()))
            points += length
        else:
            price = block_tokens(raw, block)
            total += price
            if runs is not None:
                runs.append(price)
        if size < PREVIEW_CHARS and block is not None:
            piece = block.text if isinstance(block.text, str) else _label(block)
            parts.append(piece[: PREVIEW_CHARS - size])
            size += len(parts[-1])
    price = _ceil4(total) + 4 if system else total + 4
    preview = " ".join(" ".join(parts).split())[:PREVIEW_CHARS]
    if runs is None or points <= len(PRUNE_MARKER):
        return price, preview, None, calls
    if len(runs) == 1 and isinstance(only := runs[0], TextRun) and not only.astral:
        return price, preview, points, calls  # the common case: one plain text block
    return price, preview, TextShape(points, tuple(runs)), calls


_ONE = bytes([0, *[1] * 255])
"""A translation table: a byte that is not zero becomes one."""
DENSE = 32
"""A text with at least one character past the BMP in this many keeps one byte a code point
(:attr:`TextRun.astral`): a position kept as a Python integer in a tuple costs about 36."""


def _astral(text: str, count: int) -> tuple[int, ...] | bytes:
    """Where in ``text`` (in code points) its ``count`` characters past the BMP are: two
    UTF-16 units each in a price, one code point each to the pruner. Their positions, or,
    in a text dense with them (one in :data:`DENSE` or more), a byte a code point, one
    where a character past the BMP is.

    In UTF-32 a code point past the BMP (0x10000 to 0x10FFFF) is the one whose third byte
    is not zero: C passes pick those bytes and make them ones; a sparse text's positions
    are then found by a C search each (a regex's match objects cost a Python step each,
    and numbering every code point an integer each). A lone surrogate (JSON may hold one)
    is in the BMP, and encoded as its own value."""
    flags = text.encode("utf-32-le", "surrogatepass")[2::4].translate(_ONE)
    if count * DENSE >= len(text):
        return flags
    positions = []
    at = flags.find(1)
    while at >= 0:
        positions.append(at)
        at = flags.find(1, at + 1)
    return tuple(positions)


def tool_calls(message: Message | None) -> int:
    """The tool calls an assistant message makes (its ``tool-call`` blocks)."""
    content = message.content if message is not None else None
    if not isinstance(content, list):
        return 0
    return sum(1 for raw in content if (b := raw_as(raw, Block)) and b.type == "tool-call")


@dataclass(frozen=True, slots=True)
class TextRun:
    """One text block of a tool result: its length in code points, and the positions of
    its characters past the BMP."""

    points: int
    astral: tuple[int, ...] | bytes = ()
    """The positions of its characters past the BMP, or for a text dense with them a
    byte a code point, one where such a character is (:func:`_astral`)."""

    def units(self, start: int, end: int) -> int:
        """The UTF-16 length of its code points ``start`` up to ``end``."""
        astral = self.astral
        if not astral:
            return end - start
        if isinstance(astral, bytes):  # the zeros are the code points of one unit
            return 2 * (end - start) - astral.count(0, start, end)
        return end - start + bisect.bisect_left(astral, end) - bisect.bisect_left(astral, start)


@dataclass(frozen=True, slots=True)
class TextShape:
    """A tool result's blocks as the pruner measures them: each text block a
    :class:`TextRun`, each other block its price (kept whole by a cut)."""

    points: int
    """Code points of all its text blocks."""
    runs: tuple[int | TextRun, ...]


Shape = int | TextShape
"""What the pruner needs of a tool result, kept instead of its text: a result of one
text block without characters past the BMP (nearly all) is its length in code points."""


def shape_points(shape: Shape) -> int:
    """The code points of a result's text, as the pruner counts them."""
    return shape if isinstance(shape, int) else shape.points


def shape_price(shape: Shape) -> int:
    """A tool result's price, from its shape (what :func:`priced_message` priced)."""
    if isinstance(shape, int):
        return _ceil4(shape) + 4 + 4
    runs = (r if isinstance(r, int) else _ceil4(r.units(0, r.points)) + 4 for r in shape.runs)
    return sum(runs) + 4


def freed(shape: Shape, cut: PruneCut | None) -> int:
    """What cutting a result of ``shape`` by ``cut`` frees (0: left whole, or no pruner)."""
    after = pruned_price(shape, cut) if cut is not None else None
    return 0 if after is None else shape_price(shape) - after


def pruned_price(shape: Shape, cut: PruneCut = DEFAULT_CUT) -> int | None:
    """The price of a tool result once the pruner has cut it with ``cut`` (the profile's:
    :attr:`~dshweb.core.profile.effective.EffectiveSettings.pruner`; ``None``: its text is
    within ``cut.threshold`` code points, and the pruner leaves it): the text blocks' first
    ``cut.head`` and last ``cut.tail`` code points kept, :data:`PRUNE_MARKER` between,
    every other block as it was (``ToolResultPruner.pruneContent``)."""
    if isinstance(shape, int):
        if shape <= cut.threshold:
            return None
        return _ceil4(cut.head + len(PRUNE_MARKER) + cut.tail) + 4 + 4
    total = shape.points
    if total <= cut.threshold:
        return None
    removed_start, removed_end = cut.head, total - cut.tail
    price, consumed, marked = 0, 0, False
    for run in shape.runs:
        if isinstance(run, int):
            price += run
            continue
        start, end = consumed, consumed + run.points
        head_end = min(run.points, max(0, removed_start - start))
        tail_start = min(run.points, max(0, removed_end - start))
        units = run.units(0, head_end) + run.units(tail_start, run.points)
        if start < removed_end and end > removed_start and not marked:
            units, marked = units + len(PRUNE_MARKER), True
        if units:
            price += _ceil4(units) + 4
        consumed = end
    return price + 4


def _label(block: Block) -> str:
    return f"[{block.type} {block.name or ''}]".replace(" ]", "]")


def message_tokens(message: Message | None) -> int:
    return message_price(message)[0]


def header_key(header: Header | None) -> bytes:
    """The canonical request header as ``measure()`` compares it: config, the adapter
    defaults only when they mark ``reasoningEffort`` or ``maxTokens``, tools if any.

    Only ever compared for equality, so kept as a 32-byte digest: the canonical text is
    20–30 KB with a real tool set, held for every session and in every checkpoint."""
    if header is None:
        return b"\x00"
    parts = [raw_key(header.config)]
    defaults = raw_as(header.adapter_defaults, AdapterDefaults)
    if defaults is not None and (defaults.reasoning_effort is True or defaults.max_tokens is True):
        parts.append(raw_key(header.adapter_defaults))
    else:
        parts.append(b"")
    parts.append(raw_key(header.tools) if has_tools(header) else b"")
    return hashlib.sha256(b"\x00".join(parts)).digest()


def has_tools(header: Header | None) -> bool:
    if header is None or not raw_present(header.tools):
        return False
    return raw_key(header.tools) not in _EMPTY_TOOLS


def tools_tokens(header: Header | None) -> int:
    """Price of a request header's tool schemas: 0 without tools."""
    if header is None or not has_tools(header):  # (the first test is for mypy)
        return 0
    return _ceil4(raw_length(header.tools)) + 4


def header_config(header: Header | None) -> HeaderConfig:
    found = raw_as(header.config, HeaderConfig) if header is not None else None
    return found if found is not None else HeaderConfig()


@dataclass(frozen=True, slots=True)
class HeaderReading:
    """What the meter reads of a request header (:func:`read_header`)."""

    key: bytes
    """:func:`header_key`."""
    tools_tokens: int
    """:func:`tools_tokens`."""
    config: HeaderConfig
    """:func:`header_config` (shared between equal headers: read, never changed)."""


_last_header: tuple[tuple[bytes, bytes, bytes], HeaderReading] | None = None


def read_header(header: Header | None) -> HeaderReading:
    """:func:`header_key`, :func:`tools_tokens` and :func:`header_config` of ``header``.

    A session sends the same header (20–30 KB of tool schemas) with nearly every
    request, so the reading of the last header read is kept, by its exact text, and
    given again for an equal one: hashing and measuring it again was a fifth of the
    cost of a whole fold."""
    global _last_header
    if header is None:
        return HeaderReading(header_key(None), 0, HeaderConfig())
    parts = (raw_key(header.config), raw_key(header.adapter_defaults), raw_key(header.tools))
    last = _last_header
    if last is not None and last[0] == parts:
        return last[1]
    reading = HeaderReading(header_key(header), tools_tokens(header), header_config(header))
    _last_header = (parts, reading)
    return reading
