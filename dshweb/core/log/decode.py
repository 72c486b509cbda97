"""One log line into one wire record (:mod:`dshweb.core.log.wire`), and the measures of its
raw JSON parts.

:func:`decode_event` takes msgspec's path when it is installed: one C pass from the
line's bytes to the record, fields the fold never reads skipped unbuilt. A line it
refuses takes the stdlib path (``json.loads`` and the lenient converter), which is also
the whole story without msgspec; ``fast=False`` forces it (tests compare the two).
A line that is not JSON, or not an event object, raises :class:`LineError`.

A :data:`~dshweb.core.log.structs.Raw` part is the JSON text the host wrote (msgspec) or its
parsed value (stdlib); :func:`raw_length`, :func:`raw_key`, :func:`raw_value` and
:func:`raw_as` read either the same way.
"""

from __future__ import annotations

from typing import Any, TypeVar, Union

from dshweb.core.log.jsjson import js_len, js_stringify, loads_js
from dshweb.core.log.structs import HAVE_MSGSPEC, RawValue, Struct, convert
from dshweb.core.log.wire import BY_KIND, KNOWN, AnyEvent, Other
from dshweb.core.said import say

T = TypeVar("T", bound=Struct)


class LineError(ValueError):
    """A line that is not a DSH event: ``reason`` says why, for a person."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _lenient(line: bytes) -> AnyEvent:
    try:  # as DSH reads its own log: a bad byte is U+FFFD
        record = loads_js(line.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as error:
        raise LineError(say("line-malformed-why", detail=_short(error))) from None
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        raise LineError(say("line-not-event"))
    return event_from_dict(record)


def _short(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return str(error)


def event_from_dict(record: dict[str, Any]) -> AnyEvent:
    """The record of a parsed event object (the stdlib path; tests build events with it)."""
    cls = BY_KIND.get(record["type"])
    return convert(record, cls) if cls is not None else convert(record, Other)


if HAVE_MSGSPEC:
    import msgspec

    _events = msgspec.json.Decoder(Union[KNOWN])  # noqa: UP007
    _other = msgspec.json.Decoder(Other)
    _decoders: dict[Any, msgspec.json.Decoder[Any]] = {}
    _KINDS = frozenset(kind.encode() for kind in BY_KIND)
    _TYPE_FIRST = b'{"type":"'

    def _fast(line: bytes) -> AnyEvent:
        # DSH writes the type first: a type the fold does not read (a third of a real
        # log's lines) goes straight to its record, not through the union's refusal.
        if line.startswith(_TYPE_FIRST):
            kind = line[9 : line.find(b'"', 9)]
            if kind not in _KINDS and b"\\" not in kind:
                return _unread(line)
        try:
            return _events.decode(line)  # type: ignore[no-any-return]
        except msgspec.ValidationError:
            pass
        except (msgspec.DecodeError, RecursionError):
            return _lenient(line)
        return _unread(line)

    def _unread(line: bytes) -> AnyEvent:
        """A line of a type the union does not hold (or that it refused)."""
        try:
            other = _other.decode(line)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            return _lenient(line)
        return other if other.type not in BY_KIND else _lenient(line)

    def _decoder(tp: Any) -> msgspec.json.Decoder[Any]:
        found = _decoders.get(tp)
        if found is None:
            found = _decoders[tp] = msgspec.json.Decoder(tp)
        return found


def decode_event(line: bytes, *, fast: bool = True) -> AnyEvent:
    """The record of one log line (see the module docstring)."""
    if fast and HAVE_MSGSPEC:
        return _fast(line)
    return _lenient(line)


# -- raw parts --------------------------------------------------------------------------


def raw_present(raw: Any) -> bool:
    if isinstance(raw, RawValue):
        return raw.value is not RawValue.MISSING
    return len(raw) > 0


def raw_value(raw: Any) -> Any:
    """The parsed value (``None`` when the key was missing)."""
    if isinstance(raw, RawValue):
        return None if raw.value is RawValue.MISSING else raw.value
    if not len(raw):
        return None
    try:
        return loads_js(bytes(raw).decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None  # msgspec skipped past what json cannot read (too deep)


def raw_length(raw: Any) -> int:
    """``JSON.stringify(value).length`` of the part, read off the host's own text."""
    if isinstance(raw, RawValue):
        return js_len(js_stringify(raw.value)) if raw_present(raw) else 0
    text = bytes(raw)
    if text.isascii():
        return len(text)
    return js_len(text.decode("utf-8", "replace"))


def raw_key(raw: Any) -> bytes:
    """The part's JSON text, to compare two parts (empty when missing)."""
    if isinstance(raw, RawValue):
        return js_stringify(raw.value).encode() if raw_present(raw) else b""
    return bytes(raw)


def raw_as(raw: Any, cls: type[T]) -> T | None:
    """The part as a record of ``cls`` (``None`` unless it is a JSON object)."""
    if isinstance(raw, RawValue):
        return convert(raw.value, cls) if isinstance(raw.value, dict) else None
    if not len(raw):
        return None
    try:
        return _decoder(cls).decode(raw)  # type: ignore[no-any-return]
    except (msgspec.ValidationError, msgspec.DecodeError):
        value = raw_value(raw)
        return convert(value, cls) if isinstance(value, dict) else None


def raw_list(raw: Any, cls: type[T]) -> list[T]:
    """The part as a list of ``cls`` records (items that are not objects left out)."""
    if isinstance(raw, RawValue):
        value = raw.value
    elif not len(raw):
        return []
    else:
        try:
            return _decoder(list[cls]).decode(raw)  # type: ignore[no-any-return,valid-type]
        except (msgspec.ValidationError, msgspec.DecodeError):
            value = raw_value(raw)
    if not isinstance(value, list):
        return []
    return [convert(item, cls) for item in value if isinstance(item, dict)]
