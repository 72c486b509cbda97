"""Config schemas for plugin settings, and the checks that turn raw values into clean ones.

A :class:`Schema` lists its keys (:class:`Field`: type, default, bounds or choices, help
text) and its cross-field rules. :func:`validate` turns a raw ``config`` mapping (as read
from a patch, or as a form hands it over) into clean typed values plus messages a person
understands, one per key and the cross-field ones under :data:`NON_FIELD`.
:func:`minimal_config` is what gets written back: a patch row's ``config`` replaces the
plugin's whole config (DSH_FACTS §9), so only the keys that differ from the defaults go in.

Invariants: values are JSON/YAML-shaped (bool, int, float, str, None, list of str); a key
the schema does not know is kept verbatim (``Validated.unknown``), never dropped, and so
is a ``!!js`` expression, which cannot be checked without running it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from dshweb.core.profile.dshyaml import JsExpr

NON_FIELD = "__all__"
"""The ``errors`` key for a rule that involves more than one key (Django's own name)."""


class Kind(StrEnum):
    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    STRING = "string"
    CHOICE = "choice"
    STRINGS = "strings"
    """A list of non-empty strings."""


Value = bool | int | float | str | None | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Field:
    key: str
    kind: Kind
    default: Value
    help: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    choices: tuple[str, ...] = ()
    nullable: bool = False
    """``None`` (YAML ``null``) is an accepted value with its own meaning."""


Config = Mapping[str, object]
Rule = Callable[[Config, frozenset[str]], str | None]
"""A cross-field check: the clean config and the keys the raw config set; a message or None."""


@dataclass(frozen=True, slots=True)
class Schema:
    plugin_id: str
    """The row id a profile patch addresses."""
    fields: tuple[Field, ...]
    rules: tuple[Rule, ...] = ()
    keys: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", frozenset(f.key for f in self.fields))

    def get(self, key: str) -> Field:
        for candidate in self.fields:
            if candidate.key == key:
                return candidate
        raise KeyError(key)

    def defaults(self) -> dict[str, object]:
        return {f.key: _plain(f.default) for f in self.fields}


@dataclass(frozen=True, slots=True)
class Validated:
    config: dict[str, object]
    """Every key of the schema: the given value when it is valid, else the default (which
    is what the plugin itself falls back to), then the unknown keys as given."""
    errors: dict[str, str]
    unknown: dict[str, object]
    given: frozenset[str]
    """The schema keys the raw config set (valid or not)."""

    @property
    def ok(self) -> bool:
        return not self.errors


def validate(schema: Schema, raw: Mapping[str, object]) -> Validated:
    """Check ``raw`` against ``schema``; cross-field rules run only on individually valid keys."""
    config: dict[str, object] = {}
    errors: dict[str, str] = {}
    given = frozenset(k for k in raw if k in schema.keys)
    for spec in schema.fields:
        if spec.key not in raw:
            config[spec.key] = _plain(spec.default)
            continue
        value = raw[spec.key]
        if isinstance(value, JsExpr):
            config[spec.key] = value
            continue
        clean, message = _check(spec, value)
        if message is None:
            config[spec.key] = clean
        else:
            errors[spec.key] = message
            config[spec.key] = _plain(spec.default)
    if not errors:
        problems = [m for rule in schema.rules if (m := rule(config, given)) is not None]
        if problems:
            errors[NON_FIELD] = " ".join(problems)
    unknown = {k: v for k, v in raw.items() if k not in schema.keys}
    config.update(unknown)
    return Validated(config=config, errors=errors, unknown=unknown, given=given)


def minimal_config(schema: Schema, values: Mapping[str, object]) -> dict[str, object]:
    """``values`` without the keys equal to their defaults: what a patch row should carry.

    Schema keys come first, in schema order; keys the schema does not know are kept.
    """
    kept: dict[str, object] = {}
    for spec in schema.fields:
        if spec.key in values and not _same(values[spec.key], spec.default):
            kept[spec.key] = values[spec.key]
    kept.update({k: v for k, v in values.items() if k not in schema.keys})
    return kept


# -- checking one value ------------------------------------------------------------------


def _plain(value: Value) -> object:
    return list(value) if isinstance(value, tuple) else value


def _same(value: object, default: Value) -> bool:
    if isinstance(default, tuple):
        return isinstance(value, list | tuple) and list(value) == list(default)
    if isinstance(default, bool) or isinstance(value, bool):
        return type(value) is type(default) and value == default
    if default is None or value is None:
        return value is default
    if isinstance(default, str) or isinstance(value, str):
        return value == default
    return type(value) in (int, float) and type(default) in (int, float) and value == default


MAX_SAFE_INTEGER = 2**53 - 1
"""Past this JavaScript (DSH) cannot hold a whole number exactly: larger ones are refused."""
MAX_TEXT = 20_000
"""The longest text a config value (or one entry of a list) may be, in characters."""


def _check(spec: Field, value: object) -> tuple[object, str | None]:
    if value is None:
        if spec.nullable:
            return None, None
        return None, "must be set (leave the key out to use the default)"
    if spec.kind is Kind.BOOL:
        return (value, None) if isinstance(value, bool) else (None, "must be true or false")
    if spec.kind is Kind.STRING:
        if not isinstance(value, str) or not value.strip():
            return None, "must be a non-empty text"
        if len(value) > MAX_TEXT:
            return None, f"must be at most {MAX_TEXT:,} characters"
        return value, None
    if spec.kind is Kind.CHOICE:
        if value in spec.choices:
            return value, None
        return None, "must be one of " + ", ".join(spec.choices)
    if spec.kind is Kind.STRINGS:
        if not isinstance(value, list | tuple):
            return None, "must be a list of texts"
        if not all(isinstance(item, str) and item.strip() for item in value):
            return None, "every entry must be a non-empty text"
        if sum(len(item) for item in value) > MAX_TEXT:
            return None, f"must be at most {MAX_TEXT:,} characters in all"
        return list(value), None
    return _check_number(spec, value)


def _check_number(spec: Field, value: object) -> tuple[object, str | None]:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        return None, f"must be between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None, "must be a number"
    number: int | float = value
    if spec.kind is Kind.INT and isinstance(value, float):
        if not value.is_integer():
            return None, "must be a whole number"
        number = int(value)
    low, high = spec.minimum, spec.maximum
    below = low is not None and (number <= low if spec.exclusive_minimum else number < low)
    above = high is not None and (number >= high if spec.exclusive_maximum else number > high)
    if below or above:
        return None, _range_message(spec)
    return number, None


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _range_message(spec: Field) -> str:
    low, high = spec.minimum, spec.maximum
    whole = "a whole number" if spec.kind is Kind.INT else "a number"
    if low is not None and high is not None:
        if spec.exclusive_minimum and spec.exclusive_maximum:
            return f"must be between {_num(low)} and {_num(high)}, exclusive"
        if spec.exclusive_minimum or spec.exclusive_maximum:
            return (
                f"must be {'above' if spec.exclusive_minimum else 'at least'} {_num(low)} "
                f"and {'below' if spec.exclusive_maximum else 'at most'} {_num(high)}"
            )
        return f"must be between {_num(low)} and {_num(high)}"
    if low is not None:
        if spec.exclusive_minimum:
            return f"must be {whole} greater than {_num(low)}"
        return f"must be {whole} of at least {_num(low)}"
    assert high is not None
    return f"must be {whole} of at most {_num(high)}"
