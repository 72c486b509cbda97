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


class Problem(str):
    """What is wrong with a value, in English words (it is a ``str``), naming its sentence
    (``said``) and the figures that fill it, so that a page can say it in another language
    (:mod:`dshweb.profiles.labels`)."""

    said: str
    figures: tuple[tuple[str, object], ...]

    def __new__(cls, text: str, said: str, figures: tuple[tuple[str, object], ...] = ()) -> Problem:
        problem = super().__new__(cls, text)
        problem.said, problem.figures = said, figures
        return problem


Rule = Callable[[Config, frozenset[str]], Problem | None]
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


# A plugin's defaults are its schema's (core/profile/plugins.py), read through these and
# never retyped: the settings editor, the fold and the occupancy line then agree.


def default_number(schema: Schema, key: str) -> float:
    """The schema's default for a number key, as written there (an int stays an int)."""
    value = schema.get(key).default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{schema.plugin_id}.{key} has no number default: {value!r}")
    return value


def default_int(schema: Schema, key: str) -> int:
    value = schema.get(key).default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{schema.plugin_id}.{key} has no integer default: {value!r}")
    return value


def default_flag(schema: Schema, key: str) -> bool:
    value = schema.get(key).default
    if not isinstance(value, bool):
        raise TypeError(f"{schema.plugin_id}.{key} has no boolean default: {value!r}")
    return value


def default_text(schema: Schema, key: str) -> str:
    value = schema.get(key).default
    if not isinstance(value, str):
        raise TypeError(f"{schema.plugin_id}.{key} has no string default: {value!r}")
    return value


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
        if len(problems) == 1:
            errors[NON_FIELD] = problems[0]
        elif problems:
            errors[NON_FIELD] = Problem(
                " ".join(problems), "several", (("problems", tuple(problems)),)
            )
    unknown = {k: v for k, v in raw.items() if k not in schema.keys}
    config.update(unknown)
    return Validated(config=config, errors=errors, unknown=unknown, given=given)


def refusals(checked: Validated) -> list[str]:
    """Why a plugin that throws on a config it cannot use (``compaction-basic``,
    ``tool-result-pruner``) would refuse ``checked``: each invalid value, each key it does
    not know, and each ``!!js`` value, which dshweb cannot check without running it.
    Empty: the plugin starts with it."""
    problems = [
        str(message) if key == NON_FIELD else f"{key} {message}"
        for key, message in checked.errors.items()
    ]
    problems += [f"unknown key {key!r}" for key in checked.unknown]
    problems += [
        f"{key} is a !!js expression, which dshweb does not evaluate"
        for key, value in checked.config.items()
        if isinstance(value, JsExpr)
    ]
    return problems


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


def _check(spec: Field, value: object) -> tuple[object, Problem | None]:
    if value is None:
        if spec.nullable:
            return None, None
        return None, Problem("must be set (leave the key out to use the default)", "unset")
    if spec.kind is Kind.BOOL:
        if isinstance(value, bool):
            return value, None
        return None, Problem("must be true or false", "bool")
    limit = (("limit", f"{MAX_TEXT:,}"),)
    if spec.kind is Kind.STRING:
        if not isinstance(value, str) or not value.strip():
            return None, Problem("must be a non-empty text", "text")
        if len(value) > MAX_TEXT:
            return None, Problem(f"must be at most {MAX_TEXT:,} characters", "text-long", limit)
        return value, None
    if spec.kind is Kind.CHOICE:
        if value in spec.choices:
            return value, None
        choices = ", ".join(spec.choices)
        return None, Problem(f"must be one of {choices}", "choice", (("choices", choices),))
    if spec.kind is Kind.STRINGS:
        if not isinstance(value, list | tuple):
            return None, Problem("must be a list of texts", "texts")
        if not all(isinstance(item, str) and item.strip() for item in value):
            return None, Problem("every entry must be a non-empty text", "texts-empty")
        if sum(len(item) for item in value) > MAX_TEXT:
            text = f"must be at most {MAX_TEXT:,} characters in all"
            return None, Problem(text, "texts-long", limit)
        return list(value), None
    return _check_number(spec, value)


def _check_number(spec: Field, value: object) -> tuple[object, Problem | None]:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        text = f"must be between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}"
        return None, Problem(text, "safe", (("limit", MAX_SAFE_INTEGER),))
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None, Problem("must be a number", "number")
    number: int | float = value
    if spec.kind is Kind.INT and isinstance(value, float):
        if not value.is_integer():
            return None, Problem("must be a whole number", "whole")
        number = int(value)
    low, high = spec.minimum, spec.maximum
    below = low is not None and (number <= low if spec.exclusive_minimum else number < low)
    above = high is not None and (number >= high if spec.exclusive_maximum else number > high)
    if below or above:
        return None, _range_message(spec)
    return number, None


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _range_message(spec: Field) -> Problem:
    low, high = spec.minimum, spec.maximum
    whole = "a whole number" if spec.kind is Kind.INT else "a number"
    kind = "int" if spec.kind is Kind.INT else "number"
    above, below = spec.exclusive_minimum, spec.exclusive_maximum
    said = f"{'gt' if above else 'ge'}-{'lt' if below else 'le'}"
    figures: tuple[tuple[str, object], ...]
    if low is not None and high is not None:
        figures = (("low", _num(low)), ("high", _num(high)))
        if above and below:
            text = f"must be between {_num(low)} and {_num(high)}, exclusive"
        elif above or below:
            text = (
                f"must be {'above' if above else 'at least'} {_num(low)} "
                f"and {'below' if below else 'at most'} {_num(high)}"
            )
        else:
            text = f"must be between {_num(low)} and {_num(high)}"
        return Problem(text, f"range-{said}", figures)
    if low is not None:
        figures = (("low", _num(low)),)
        if above:
            return Problem(f"must be {whole} greater than {_num(low)}", f"{kind}-gt", figures)
        return Problem(f"must be {whole} of at least {_num(low)}", f"{kind}-ge", figures)
    assert high is not None
    figures = (("high", _num(high)),)
    return Problem(f"must be {whole} of at most {_num(high)}", f"{kind}-le", figures)
