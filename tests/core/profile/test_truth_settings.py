"""The three plugin schemas: defaults as the plugins ship them, every bound, every cross rule."""

from __future__ import annotations

import re

import pytest

from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.plugins import (
    COMPACTION_BASIC_SCHEMA,
    CONTEXT_TRUTH_SCHEMA,
    DEFAULT_COMPACTION_RULES,
    PRUNE_MARKER,
    SCHEMAS,
    TOOL_RESULT_PRUNER_SCHEMA,
)
from dshweb.core.profile.schema import NON_FIELD, Kind, Schema, minimal_config, validate
from tests.conftest import REPO

README_CONFIGURATION = REPO / "tests" / "fixtures" / "dsh-context-truth-configuration.md"
"""The plugin README's configuration section (a copy: the README is not in any package)."""

# The README's configuration table, plus ``showAutoCompactionPoint`` from the source's
# DEFAULT_OPTIONS (lib/index.js, abdc1f8), in the table's order.
CONTEXT_TRUTH_DEFAULTS: dict[str, object] = {
    "enabled": True,
    "language": "en",
    "order": 100,
    "quantumPercent": 5,
    "paceEstimate": True,
    "paceSamples": 16,
    "paceMinSamples": 3,
    "paceMargin": 0.25,
    "thresholdRatio": 0.8,
    "headroomTokens": 65536,
    "reservedCompletionTokens": None,
    "moderateAt": 0.5,
    "tightAt": 0.85,
    "hysteresis": 0.05,
    "tightAdvice": "none",
    "authoritative": True,
    "staleClaimClause": True,
    "foldClause": True,
    "freeClause": True,
    "logBandChanges": True,
    "patchCompactionPrompt": True,
    "compactionRules": list(DEFAULT_COMPACTION_RULES),
    "foldAtIdle": False,
    "foldAtIdleMarginPercent": 5,
    "foldAtIdleMethod": "auto",
    "foldAtIdleCooldownMs": 60000,
    "showAutoCompactionPoint": True,
}

COMPACTION_BASIC_DEFAULTS: dict[str, object] = {
    "thresholdRatio": 0.8,
    "headroomTokens": 65536,
    "retainRatio": 0.16,
    "retainTokens": None,
    "maxTokens": None,
    "compactionRetries": 1,
    "maxOverflowRetries": 1,
    "auto": True,
    "summarizationProvider": None,
    "summarizationModel": None,
}

PRUNER_DEFAULTS: dict[str, object] = {"thresholdChars": 8192, "headChars": 4096, "tailChars": 1024}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (CONTEXT_TRUTH_SCHEMA, CONTEXT_TRUTH_DEFAULTS),
        (COMPACTION_BASIC_SCHEMA, COMPACTION_BASIC_DEFAULTS),
        (TOOL_RESULT_PRUNER_SCHEMA, PRUNER_DEFAULTS),
    ],
    ids=lambda v: v.plugin_id if isinstance(v, Schema) else "",
)
def test_defaults_are_the_plugins_own(schema: Schema, expected: dict[str, object]) -> None:
    assert schema.defaults() == expected
    assert list(schema.defaults()) == list(expected)
    assert validate(schema, {}).config == expected
    assert validate(schema, {}).ok


def _readme_table(text: str) -> dict[str, str]:
    """``key -> default`` cells of the README's configuration table."""
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    found: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        keys = re.findall(r"`([^`]+)`", cells[0])
        values = [v.strip().strip("`") for v in cells[1].split(" / ")]
        if len(values) != len(keys):
            values = [cells[1].strip("`")] * len(keys)
        found.update(zip(keys, values, strict=True))
    return found


def test_every_key_of_the_readme_table_with_its_default() -> None:
    table = _readme_table(README_CONFIGURATION.read_text(encoding="utf-8"))
    assert len(table) == 26
    assert set(table) == set(CONTEXT_TRUTH_SCHEMA.keys) - {"showAutoCompactionPoint"}
    for key, cell in table.items():
        default = CONTEXT_TRUTH_SCHEMA.get(key).default
        if key == "compactionRules":
            assert cell == "see above"
        elif default is None:
            assert cell == "null"
        elif isinstance(default, bool):
            assert cell == str(default).lower()
        else:
            assert cell == str(default), key


def test_default_rules_are_the_readme_rules() -> None:
    # The README: the directive grows by "+534 characters" (a newline before each rule).
    assert sum(1 + len(rule) for rule in DEFAULT_COMPACTION_RULES) == 534
    assert CONTEXT_TRUTH_SCHEMA.get("compactionRules").kind is Kind.STRINGS


def test_marker_length_counts_code_points() -> None:
    assert len(PRUNE_MARKER) == 39


@pytest.mark.parametrize(
    ("schema", "key", "value", "message"),
    [
        (CONTEXT_TRUTH_SCHEMA, "enabled", "yes", "must be true or false"),
        (CONTEXT_TRUTH_SCHEMA, "enabled", 1, "must be true or false"),
        (
            CONTEXT_TRUTH_SCHEMA,
            "enabled",
            None,
            "must be set (leave the key out to use the default)",
        ),
        (CONTEXT_TRUTH_SCHEMA, "language", "fr", "must be one of en, zh"),
        (CONTEXT_TRUTH_SCHEMA, "order", 1.5, "must be a whole number"),
        (CONTEXT_TRUTH_SCHEMA, "order", "100", "must be a number"),
        (CONTEXT_TRUTH_SCHEMA, "order", True, "must be a number"),
        (CONTEXT_TRUTH_SCHEMA, "quantumPercent", -1, "must be between 0 and 100"),
        (CONTEXT_TRUTH_SCHEMA, "quantumPercent", 101, "must be between 0 and 100"),
        (CONTEXT_TRUTH_SCHEMA, "quantumPercent", float("nan"), "must be a number"),
        (CONTEXT_TRUTH_SCHEMA, "paceSamples", 0, "must be between 1 and 256"),
        (CONTEXT_TRUTH_SCHEMA, "paceMinSamples", 257, "must be between 1 and 256"),
        (CONTEXT_TRUTH_SCHEMA, "paceMargin", 1.5, "must be between 0 and 1"),
        (CONTEXT_TRUTH_SCHEMA, "thresholdRatio", 0, "must be above 0 and at most 1"),
        (CONTEXT_TRUTH_SCHEMA, "thresholdRatio", 1.01, "must be above 0 and at most 1"),
        (CONTEXT_TRUTH_SCHEMA, "headroomTokens", -1, "must be a whole number of at least 0"),
        (
            CONTEXT_TRUTH_SCHEMA,
            "reservedCompletionTokens",
            -5,
            "must be a whole number of at least 0",
        ),
        (CONTEXT_TRUTH_SCHEMA, "reservedCompletionTokens", 1.5, "must be a whole number"),
        (CONTEXT_TRUTH_SCHEMA, "moderateAt", 0, "must be between 0 and 1, exclusive"),
        (CONTEXT_TRUTH_SCHEMA, "tightAt", 1, "must be between 0 and 1, exclusive"),
        (CONTEXT_TRUTH_SCHEMA, "hysteresis", 1, "must be at least 0 and below 1"),
        (CONTEXT_TRUTH_SCHEMA, "hysteresis", -0.01, "must be at least 0 and below 1"),
        (CONTEXT_TRUTH_SCHEMA, "tightAdvice", "loud", "must be one of none, inform, stop"),
        (CONTEXT_TRUTH_SCHEMA, "compactionRules", "- one rule", "must be a list of texts"),
        (
            CONTEXT_TRUTH_SCHEMA,
            "compactionRules",
            ["- ok", "  "],
            "every entry must be a non-empty text",
        ),
        (
            CONTEXT_TRUTH_SCHEMA,
            "compactionRules",
            ["- ok", 3],
            "every entry must be a non-empty text",
        ),
        (CONTEXT_TRUTH_SCHEMA, "foldAtIdleMarginPercent", 0, "must be above 0 and at most 100"),
        (CONTEXT_TRUTH_SCHEMA, "foldAtIdleMethod", "both", "must be one of auto, command, service"),
        (CONTEXT_TRUTH_SCHEMA, "foldAtIdleCooldownMs", -1, "must be a whole number of at least 0"),
        (COMPACTION_BASIC_SCHEMA, "thresholdRatio", 0, "must be above 0 and at most 1"),
        (COMPACTION_BASIC_SCHEMA, "retainRatio", 1, "must be between 0 and 1, exclusive"),
        (COMPACTION_BASIC_SCHEMA, "retainTokens", -1, "must be a whole number of at least 0"),
        (COMPACTION_BASIC_SCHEMA, "maxTokens", 0, "must be a whole number of at least 1"),
        (COMPACTION_BASIC_SCHEMA, "compactionRetries", -1, "must be a whole number of at least 0"),
        (COMPACTION_BASIC_SCHEMA, "maxOverflowRetries", 0.5, "must be a whole number"),
        (COMPACTION_BASIC_SCHEMA, "auto", "true", "must be true or false"),
        (COMPACTION_BASIC_SCHEMA, "summarizationModel", "", "must be a non-empty text"),
        (TOOL_RESULT_PRUNER_SCHEMA, "thresholdChars", 0, "must be a whole number of at least 1"),
        (TOOL_RESULT_PRUNER_SCHEMA, "headChars", -1, "must be a whole number of at least 0"),
    ],
)
def test_each_bound_has_a_readable_message(
    schema: Schema, key: str, value: object, message: str
) -> None:
    result = validate(schema, {key: value})
    assert result.errors == {key: message}
    assert result.config[key] == schema.defaults()[key]


@pytest.mark.parametrize(
    ("schema", "key", "value", "clean"),
    [
        (CONTEXT_TRUTH_SCHEMA, "quantumPercent", 0, 0),
        (CONTEXT_TRUTH_SCHEMA, "quantumPercent", 2.5, 2.5),
        (CONTEXT_TRUTH_SCHEMA, "order", 110.0, 110),
        (CONTEXT_TRUTH_SCHEMA, "order", -5, -5),
        (CONTEXT_TRUTH_SCHEMA, "thresholdRatio", 1, 1),
        (CONTEXT_TRUTH_SCHEMA, "reservedCompletionTokens", None, None),
        (CONTEXT_TRUTH_SCHEMA, "reservedCompletionTokens", 0, 0),
        (CONTEXT_TRUTH_SCHEMA, "hysteresis", 0, 0),
        (CONTEXT_TRUTH_SCHEMA, "language", "zh", "zh"),
        (CONTEXT_TRUTH_SCHEMA, "compactionRules", [], []),
        (CONTEXT_TRUTH_SCHEMA, "compactionRules", ("- a",), ["- a"]),
        (CONTEXT_TRUTH_SCHEMA, "foldAtIdleMarginPercent", 100, 100),
        (COMPACTION_BASIC_SCHEMA, "retainTokens", 5000, 5000),
        (COMPACTION_BASIC_SCHEMA, "maxTokens", None, None),
        (TOOL_RESULT_PRUNER_SCHEMA, "tailChars", 0, 0),
    ],
)
def test_accepted_values_come_back_clean(
    schema: Schema, key: str, value: object, clean: object
) -> None:
    result = validate(schema, {key: value})
    assert result.ok, result.errors
    assert result.config[key] == clean
    assert type(result.config[key]) is type(clean)
    assert result.given == {key}


@pytest.mark.parametrize(
    ("schema", "raw", "message"),
    [
        (CONTEXT_TRUTH_SCHEMA, {"moderateAt": 0.9}, "moderateAt must be below tightAt."),
        (
            CONTEXT_TRUTH_SCHEMA,
            {"moderateAt": 0.6, "tightAt": 0.6},
            "moderateAt must be below tightAt.",
        ),
        (
            CONTEXT_TRUTH_SCHEMA,
            {"paceMinSamples": 17},
            "paceMinSamples must not exceed paceSamples, or the pace estimate never shows.",
        ),
        (
            CONTEXT_TRUTH_SCHEMA,
            {"paceSamples": 2},
            "paceMinSamples must not exceed paceSamples, or the pace estimate never shows.",
        ),
        (
            COMPACTION_BASIC_SCHEMA,
            {"retainRatio": 0.2, "retainTokens": 1000},
            "Set retainRatio or retainTokens, not both.",
        ),
        (
            COMPACTION_BASIC_SCHEMA,
            {"summarizationProvider": "deepseek"},
            "summarizationProvider and summarizationModel go together: set both or neither.",
        ),
        (
            COMPACTION_BASIC_SCHEMA,
            {"summarizationModel": "deepseek-flash"},
            "summarizationProvider and summarizationModel go together: set both or neither.",
        ),
        (
            TOOL_RESULT_PRUNER_SCHEMA,
            {"thresholdChars": 5158},
            "headChars + tailChars + the 39-character marker is 5159, more than thresholdChars "
            "(5158): a pruned result would not be smaller.",
        ),
        (
            TOOL_RESULT_PRUNER_SCHEMA,
            {"thresholdChars": 100, "headChars": 40, "tailChars": 22},
            "headChars + tailChars + the 39-character marker is 101, more than thresholdChars "
            "(100): a pruned result would not be smaller.",
        ),
    ],
)
def test_cross_field_rules(schema: Schema, raw: dict[str, object], message: str) -> None:
    assert validate(schema, raw).errors == {NON_FIELD: message}


@pytest.mark.parametrize(
    ("schema", "raw"),
    [
        (CONTEXT_TRUTH_SCHEMA, {"moderateAt": 0.3, "tightAt": 0.4}),
        (CONTEXT_TRUTH_SCHEMA, {"paceSamples": 3, "paceMinSamples": 3}),
        (COMPACTION_BASIC_SCHEMA, {"retainTokens": 1000}),
        (COMPACTION_BASIC_SCHEMA, {"retainRatio": 0.2, "retainTokens": None}),
        (COMPACTION_BASIC_SCHEMA, {"summarizationProvider": "p", "summarizationModel": "m"}),
        (TOOL_RESULT_PRUNER_SCHEMA, {"thresholdChars": 5159}),
        (TOOL_RESULT_PRUNER_SCHEMA, {"thresholdChars": 100, "headChars": 40, "tailChars": 21}),
    ],
)
def test_cross_field_rules_pass_at_their_edges(schema: Schema, raw: dict[str, object]) -> None:
    assert validate(schema, raw).errors == {}


def test_cross_rules_wait_for_valid_fields() -> None:
    # One bad key is reported alone; a rule over keys that are not all valid stays quiet.
    result = validate(CONTEXT_TRUTH_SCHEMA, {"moderateAt": 2, "tightAt": 0.3})
    assert result.errors == {"moderateAt": "must be between 0 and 1, exclusive"}


def test_unknown_keys_and_expressions_are_kept_verbatim() -> None:
    expr = JsExpr("process.env.RATIO")
    raw: dict[str, object] = {
        "thresholdRatio": expr,
        "modelPolicies": [{"model": "x"}],
        "headroomTokens": 1000,
    }
    result = validate(COMPACTION_BASIC_SCHEMA, raw)
    assert result.ok
    assert result.unknown == {"modelPolicies": [{"model": "x"}]}
    assert result.config["thresholdRatio"] is expr
    assert result.config["modelPolicies"] == [{"model": "x"}]
    assert minimal_config(COMPACTION_BASIC_SCHEMA, result.config) == {
        "thresholdRatio": expr,
        "headroomTokens": 1000,
        "modelPolicies": [{"model": "x"}],
    }


@pytest.mark.parametrize(
    ("schema", "values", "expected"),
    [
        (CONTEXT_TRUTH_SCHEMA, CONTEXT_TRUTH_DEFAULTS, {}),
        (
            CONTEXT_TRUTH_SCHEMA,
            {**CONTEXT_TRUTH_DEFAULTS, "foldAtIdle": True, "language": "zh"},
            {"language": "zh", "foldAtIdle": True},
        ),
        (CONTEXT_TRUTH_SCHEMA, {"quantumPercent": 5.0, "thresholdRatio": 0.8}, {}),
        (CONTEXT_TRUTH_SCHEMA, {"compactionRules": list(DEFAULT_COMPACTION_RULES)}, {}),
        (CONTEXT_TRUTH_SCHEMA, {"compactionRules": []}, {"compactionRules": []}),
        (CONTEXT_TRUTH_SCHEMA, {"reservedCompletionTokens": 0}, {"reservedCompletionTokens": 0}),
        (CONTEXT_TRUTH_SCHEMA, {"reservedCompletionTokens": None}, {}),
        (CONTEXT_TRUTH_SCHEMA, {"order": 100, "enabled": False}, {"enabled": False}),
        (COMPACTION_BASIC_SCHEMA, {"maxTokens": 65536}, {"maxTokens": 65536}),
        (COMPACTION_BASIC_SCHEMA, {"auto": True, "compactionRetries": 1}, {}),
        (COMPACTION_BASIC_SCHEMA, {"compactionRetries": True}, {"compactionRetries": True}),
        (TOOL_RESULT_PRUNER_SCHEMA, {"tailChars": 2048, "headChars": 4096}, {"tailChars": 2048}),
    ],
)
def test_minimal_config_drops_what_equals_the_default(
    schema: Schema, values: dict[str, object], expected: dict[str, object]
) -> None:
    assert minimal_config(schema, values) == expected


def test_minimal_config_of_a_validated_edit_round_trips() -> None:
    raw: dict[str, object] = {"tightAdvice": "inform", "paceSamples": 8, "hysteresis": 0.05}
    result = validate(CONTEXT_TRUTH_SCHEMA, raw)
    patch = minimal_config(CONTEXT_TRUTH_SCHEMA, result.config)
    assert patch == {"paceSamples": 8, "tightAdvice": "inform"}
    assert validate(CONTEXT_TRUTH_SCHEMA, patch).config == result.config


def test_schemas_are_indexed_by_row_id() -> None:
    assert set(SCHEMAS) == {"context-truth", "compaction-basic", "tool-result-pruner"}
    for schema in SCHEMAS.values():
        assert len({f.key for f in schema.fields}) == len(schema.fields)
        assert all(f.help for f in schema.fields)
        for spec in schema.fields:
            if spec.kind is Kind.CHOICE:
                assert spec.default in spec.choices
