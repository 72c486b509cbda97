"""The settings of the three plugins whose patch rows dshweb edits, as data.

One :class:`~dshweb.core.profile.schema.Schema` per plugin, keyed by its patch row id in
:data:`SCHEMAS`: every key with its type, default, bounds and help, and the cross-field
rules. The machinery that checks a config against them is :mod:`dshweb.core.profile.schema`.

Defaults and help of ``context-truth`` follow the configuration table of dsh-context-truth's
README; ``showAutoCompactionPoint`` is in its source (``DEFAULT_OPTIONS``) but not the table.
"""

from __future__ import annotations

from collections.abc import Mapping

from dshweb.core.profile.profile import CONTEXT_TRUTH_ID
from dshweb.core.profile.schema import Config, Field, Kind, Problem, Schema

PRUNE_MARKER = "\n\n[... tool result middle pruned ...]\n\n"
"""What the tool-result pruner puts between the head and the tail it keeps (39 code points)."""


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


def _edges_ordered(config: Config, given: frozenset[str]) -> Problem | None:
    moderate, tight = config["moderateAt"], config["tightAt"]
    if isinstance(moderate, int | float) and isinstance(tight, int | float) and moderate >= tight:
        return Problem("moderateAt must be below tightAt.", "edges")
    return None


def _pace_samples(config: Config, given: frozenset[str]) -> Problem | None:
    need, keep = config["paceMinSamples"], config["paceSamples"]
    if isinstance(need, int) and isinstance(keep, int) and need > keep:
        return Problem(
            "paceMinSamples must not exceed paceSamples, or the pace estimate never shows.",
            "pace-samples",
        )
    return None


CONTEXT_TRUTH_SCHEMA = Schema(
    plugin_id=CONTEXT_TRUTH_ID,
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


def _retain_one_way(config: Config, given: frozenset[str]) -> Problem | None:
    if "retainRatio" in given and "retainTokens" in given and config["retainTokens"] is not None:
        return Problem("Set retainRatio or retainTokens, not both.", "retain-one-way")
    return None


def _summarizer_pair(config: Config, given: frozenset[str]) -> Problem | None:
    provider, model = config["summarizationProvider"], config["summarizationModel"]
    if (provider is None) != (model is None):
        return Problem(
            "summarizationProvider and summarizationModel go together: set both or neither.",
            "summarizer-pair",
        )
    return None


COMPACTION_BASIC_SCHEMA = Schema(
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


def _pruned_fits(config: Config, given: frozenset[str]) -> Problem | None:
    head, tail, limit = config["headChars"], config["tailChars"], config["thresholdChars"]
    if isinstance(head, int) and isinstance(tail, int) and isinstance(limit, int):
        kept = head + len(PRUNE_MARKER) + tail
        if kept > limit:
            return Problem(
                f"headChars + tailChars + the {len(PRUNE_MARKER)}-character marker is {kept}, "
                f"more than thresholdChars ({limit}): a pruned result would not be smaller.",
                "pruned-fits",
                (("marker", len(PRUNE_MARKER)), ("kept", kept), ("limit", limit)),
            )
    return None


TOOL_RESULT_PRUNER_SCHEMA = Schema(
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
    schema.plugin_id: schema
    for schema in (CONTEXT_TRUTH_SCHEMA, COMPACTION_BASIC_SCHEMA, TOOL_RESULT_PRUNER_SCHEMA)
}
