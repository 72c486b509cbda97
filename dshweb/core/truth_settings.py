"""The settings of the three plugins whose patch rows dshweb edits, as data, and their checks.

Each :class:`Schema` lists its keys (:class:`Field`: type, default, bounds or choices,
help text) and its cross-field rules. :func:`validate` turns a raw ``config`` mapping (as
read from a patch, or as a form hands it over) into clean typed values plus messages a
person understands, one per key and the cross-field ones under :data:`NON_FIELD`.
:func:`minimal_config` is what gets written back: a patch row's ``config`` replaces the
plugin's whole config (DSH_FACTS §9), so only the keys that differ from the defaults go in.

Invariants: values are JSON/YAML-shaped (bool, int, float, str, None, list of str); a key
the schema does not know is kept verbatim (``Validated.unknown``), never dropped, and so
is a ``!!js`` expression, which cannot be checked without running it.

Defaults and help of ``context-truth`` follow the configuration table of dsh-context-truth's
README; ``showAutoCompactionPoint`` is in its source (``DEFAULT_OPTIONS``) but not the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from dshweb.core.profiles import JsExpr

NON_FIELD = "__all__"
"""The ``errors`` key for a rule that involves more than one key (Django's own name)."""

PRUNE_MARKER = "\n\n[... tool result middle pruned ...]\n\n"
"""What the tool-result pruner puts between the head and the tail it keeps (39 code points)."""


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
        return list(value), None
    return _check_number(spec, value)


def _check_number(spec: Field, value: object) -> tuple[object, str | None]:
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


# -- context-truth (dsh-context-truth) -----------------------------------------------------

DEFAULT_COMPACTION_RULES = (
    "- Never record the assistant's own statements about its remaining context, token "
    "budget, or context-window pressure — not even quoted, paraphrased, or listed as an "
    "example, and not when an earlier checkpoint already carries one: drop that wording "
    "instead of copying it forward. Those readings are measured by the host and delivered "
    "separately; a model's guess about them is not a durable fact.",
    "- Never record a plan to stop, defer, or hand off work whose only justification was "
    "context pressure. Record the actual task state instead.",
)


def _fraction(key: str, default: float, help: str) -> Field:
    """A value strictly between 0 and 1."""
    return Field(
        key,
        Kind.FLOAT,
        default,
        help,
        minimum=0,
        maximum=1,
        exclusive_minimum=True,
        exclusive_maximum=True,
    )


def _bool(key: str, default: bool, help: str) -> Field:
    return Field(key, Kind.BOOL, default, help)


def _edges_ordered(config: Config, given: frozenset[str]) -> str | None:
    moderate, tight = config["moderateAt"], config["tightAt"]
    if isinstance(moderate, int | float) and isinstance(tight, int | float) and moderate >= tight:
        return "moderateAt must be below tightAt."
    return None


def _pace_samples(config: Config, given: frozenset[str]) -> str | None:
    need, keep = config["paceMinSamples"], config["paceSamples"]
    if isinstance(need, int) and isinstance(keep, int) and need > keep:
        return "paceMinSamples must not exceed paceSamples, or the pace estimate never shows."
    return None


CONTEXT_TRUTH = Schema(
    plugin_id="context-truth",
    fields=(
        _bool("enabled", True, "Master switch for capability 1 (the occupancy line)."),
        Field("language", Kind.CHOICE, "en", "en / zh wording.", choices=("en", "zh")),
        Field(
            "order",
            Kind.INT,
            100,
            "Placement inside the runtime-context block (sandbox is 110, approval 115 — "
            "so it comes first).",
        ),
        Field(
            "quantumPercent",
            Kind.FLOAT,
            5,
            "Display step as a percentage of the window; sets the re-injection cadence.",
            minimum=0,
            maximum=100,
        ),
        _bool(
            "paceEstimate",
            True,
            "Translate the headroom into this session's pace (tight / critical bands).",
        ),
        Field(
            "paceSamples",
            Kind.INT,
            16,
            "Per-step deltas the median is taken over.",
            minimum=1,
            maximum=256,
        ),
        Field(
            "paceMinSamples",
            Kind.INT,
            3,
            "Samples required before any estimate is shown.",
            minimum=1,
            maximum=256,
        ),
        Field(
            "paceMargin",
            Kind.FLOAT,
            0.25,
            "Margin a higher rung must clear before the line promises more steps.",
            minimum=0,
            maximum=1,
        ),
        Field(
            "thresholdRatio",
            Kind.FLOAT,
            0.8,
            "Mirror of dsh-compaction-basic.",
            minimum=0,
            maximum=1,
            exclusive_minimum=True,
        ),
        Field("headroomTokens", Kind.INT, 65536, "Mirror of dsh-compaction-basic.", minimum=0),
        Field(
            "reservedCompletionTokens",
            Kind.INT,
            None,
            "null reads the routed request's own maxTokens.",
            minimum=0,
            nullable=True,
        ),
        _fraction("moderateAt", 0.5, "Band edge, as a fraction of the compaction point."),
        _fraction("tightAt", 0.85, "Band edge, as a fraction of the compaction point."),
        Field(
            "hysteresis",
            Kind.FLOAT,
            0.05,
            "Margin required before leaving a band downward.",
            minimum=0,
            maximum=1,
            exclusive_maximum=True,
        ),
        Field(
            "tightAdvice",
            Kind.CHOICE,
            "none",
            "tight closing sentence: none adds none (default), inform states the cost, "
            "stop keeps the 0.1.3 imperative.",
            choices=("none", "inform", "stop"),
        ),
        _bool("authoritative", True, 'Append the "this line is the only authority" clause.'),
        _bool(
            "staleClaimClause",
            True,
            'Retire earlier "context is nearly full" claims in the calm band.',
        ),
        _bool("foldClause", True, "Define what the fold is in the tight / critical bands."),
        _bool("freeClause", True, "Report how much of the window is still unused."),
        _bool("logBandChanges", True, "Log one ctx.logger.info per band change."),
        _bool("patchCompactionPrompt", True, "Whether to extend the compaction directive."),
        Field(
            "compactionRules",
            Kind.STRINGS,
            DEFAULT_COMPACTION_RULES,
            "Rule array appended to the compaction directive; [] disables capability 2.",
        ),
        _bool("foldAtIdle", False, "Enable capability 3 (fold at the idle boundary)."),
        Field(
            "foldAtIdleMarginPercent",
            Kind.FLOAT,
            5,
            "Fold once the headroom is within this percent of the window (50K on a 1M window).",
            minimum=0,
            maximum=100,
            exclusive_minimum=True,
        ),
        Field(
            "foldAtIdleMethod",
            Kind.CHOICE,
            "auto",
            "Channel for the request: auto runs the session's own /compact first, then "
            "falls back to the ranked service chain; command / service force one.",
            choices=("auto", "command", "service"),
        ),
        Field(
            "foldAtIdleCooldownMs",
            Kind.INT,
            60000,
            "Minimum gap between attempts, so a failure cannot hammer the engine.",
            minimum=0,
        ),
        _bool(
            "showAutoCompactionPoint",
            True,
            "Emit the auto-compaction point and the headroom left before it.",
        ),
    ),
    rules=(_edges_ordered, _pace_samples),
)


# -- compaction-basic (DSH_FACTS §7) -------------------------------------------------------


def _retain_one_way(config: Config, given: frozenset[str]) -> str | None:
    if "retainRatio" in given and "retainTokens" in given and config["retainTokens"] is not None:
        return "Set retainRatio or retainTokens, not both."
    return None


def _summarizer_pair(config: Config, given: frozenset[str]) -> str | None:
    provider, model = config["summarizationProvider"], config["summarizationModel"]
    if (provider is None) != (model is None):
        return "summarizationProvider and summarizationModel go together: set both or neither."
    return None


COMPACTION_BASIC = Schema(
    plugin_id="compaction-basic",
    fields=(
        Field(
            "thresholdRatio",
            Kind.FLOAT,
            0.8,
            "Compact once the context reaches this fraction of the window.",
            minimum=0,
            maximum=1,
            exclusive_minimum=True,
        ),
        Field(
            "headroomTokens",
            Kind.INT,
            65536,
            "Tokens kept free below the window after the reserved completion.",
            minimum=0,
        ),
        _fraction("retainRatio", 0.16, "Share of the message budget kept verbatim after a fold."),
        Field(
            "retainTokens",
            Kind.INT,
            None,
            "Absolute tokens kept verbatim after a fold (instead of retainRatio).",
            minimum=0,
            nullable=True,
        ),
        Field(
            "maxTokens",
            Kind.INT,
            None,
            "Output limit of the summary call; null means headroomTokens.",
            minimum=1,
            nullable=True,
        ),
        Field(
            "compactionRetries",
            Kind.INT,
            1,
            "Retries of a failed summary call.",
            minimum=0,
        ),
        Field(
            "maxOverflowRetries",
            Kind.INT,
            1,
            "Retries after the provider reports a context overflow.",
            minimum=0,
        ),
        _bool("auto", True, "Compact automatically before a step that would cross the point."),
        Field(
            "summarizationProvider",
            Kind.STRING,
            None,
            "Provider of the summary call (with summarizationModel); null uses the session's.",
            nullable=True,
        ),
        Field(
            "summarizationModel",
            Kind.STRING,
            None,
            "Model of the summary call (with summarizationProvider); null uses the session's.",
            nullable=True,
        ),
    ),
    rules=(_retain_one_way, _summarizer_pair),
)


# -- tool-result-pruner --------------------------------------------------------------------


def _pruned_fits(config: Config, given: frozenset[str]) -> str | None:
    head, tail, limit = config["headChars"], config["tailChars"], config["thresholdChars"]
    if isinstance(head, int) and isinstance(tail, int) and isinstance(limit, int):
        kept = head + len(PRUNE_MARKER) + tail
        if kept > limit:
            return (
                f"headChars + tailChars + the {len(PRUNE_MARKER)}-character marker is {kept}, "
                f"more than thresholdChars ({limit}): a pruned result would not be smaller."
            )
    return None


TOOL_RESULT_PRUNER = Schema(
    plugin_id="tool-result-pruner",
    fields=(
        Field(
            "thresholdChars",
            Kind.INT,
            8192,
            "A tool result longer than this many characters is pruned.",
            minimum=1,
        ),
        Field("headChars", Kind.INT, 4096, "Characters kept from the start.", minimum=0),
        Field("tailChars", Kind.INT, 1024, "Characters kept from the end.", minimum=0),
    ),
    rules=(_pruned_fits,),
)

SCHEMAS: Mapping[str, Schema] = {
    schema.plugin_id: schema for schema in (CONTEXT_TRUTH, COMPACTION_BASIC, TOOL_RESULT_PRUNER)
}
