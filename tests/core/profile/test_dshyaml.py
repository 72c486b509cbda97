"""YAML as DSH reads it: each expectation is what the real ``dsh --dump-config`` composed
for the same text (js-yaml 4.3.2, JSON schema plus ``!!js``;
tests/core/settings/test_profile_yaml_dsh.py checks a set of them against ``dsh`` itself)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dshweb.core.profile.dshyaml import DshYamlError, JsExpr, load_patch_rows, load_yaml

ROW = "- id: compaction-basic\n  config:\n"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1_000", "1_000"),
        ("0x10", 16),
        ("0X10", "0X10"),
        ("0o10", 8),
        ("010", 10),
        ("08", 8),
        ("0b101", 5),
        ("1e3", 1000),
        ("1.e3", 1000),
        (".5", 0.5),
        ("-.5", "-.5"),
        ("+.5", "+.5"),
        (".5e1", 5),
        ("+1", 1),
        ("1.0", 1),
        (".inf", math.inf),
        ("-.inf", -math.inf),
        ("inf", "inf"),
        ("yes", "yes"),
        ("on", "on"),
        ("True", True),
        ("tRUE", "tRUE"),
        ("~", None),
        ("Null", None),
        ("nULL", "nULL"),
        ("", None),
        ('"0.5"', "0.5"),
        ("'1000'", "1000"),
        ("!!str 5", "5"),
        ('!!int "7"', 7),
        ("!!int '0x10'", 16),
        ("! 5", "5"),
        ("2001-12-14", "2001-12-14"),
        ("12:30", "12:30"),
        ("1e400", "1e400"),
        ("9007199254740993", 9007199254740992),
        ("!!js Math.max(1, 2)", JsExpr("Math.max(1, 2)")),
        ("a\tb", "a\tb"),
    ],
)
def test_scalars(text: str, value: Any) -> None:
    assert load_yaml(f"v: {text}\n") == {"v": value}


def test_nan_is_a_number() -> None:
    assert math.isnan(load_yaml("v: .NaN\n")["v"])


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("0x10: 1\n010: 2\n1e3: 3\n", ["10", "16", "1000"]),  # array-index keys first, ascending
        (
            "true: 1\nnull: 2\nb: 3\n'2': 4\n'1': 5\n'01': 6\n",
            ["1", "2", "true", "null", "b", "01"],
        ),
        ("? [1, 2]\n: x\n", ["1,2"]),
        ("1e21: 1\n1e-7: 2\n", ["1e+21", "1e-7"]),
    ],
)
def test_keys_become_javascript_strings(text: str, keys: list[str]) -> None:
    assert list(load_yaml(text)) == keys


def test_no_merge_keys_and_shared_aliases() -> None:
    value = load_yaml("a: &x {k: 1}\nb:\n  <<: *x\n  m: 2\nc: *x\n")
    assert value["b"] == {"<<": {"k": 1}, "m": 2}
    assert value["c"] is value["a"]
    assert load_yaml("a: &x 1\nb: &x 2\nc: *x\n") == {"a": 1, "b": 2, "c": 2}


@pytest.mark.parametrize(
    ("text", "reason", "line", "column"),
    [
        ("a: 1\na: 2\n", "duplicated mapping key", 2, 1),
        ("a: 1\n'a': 2\n", "duplicated mapping key", 2, 1),
        ("1: x\n'1': y\n", "duplicated mapping key", 2, 1),
        (
            "a: !!int 1.5\n",
            "cannot resolve a node with !<tag:yaml.org,2002:int> explicit tag",
            1,
            13,
        ),
        ("a: !!timestamp 2001-12-14\n", "unknown tag !<tag:yaml.org,2002:timestamp>", 1, 26),
        ("a: !!merge x\n", "unknown tag !<tag:yaml.org,2002:merge>", 1, 13),
        ("a: *nope\n", 'unidentified alias "nope"', 1, 9),
        ("a: &x [*x]\n", "circular structure (an alias inside its own anchor)", 1, 4),
        ("a:\n\tb: 1\n", "tab characters must not be used in indentation", 2, 1),
        (ROW + "    v: " + "[" * 98 + "]" * 98 + "\n", "nesting exceeded maxDepth (100)", 3, 105),
    ],
)
def test_errors_name_dsh_s_reason_and_place(text: str, reason: str, line: int, column: int) -> None:
    with pytest.raises(DshYamlError) as raised:
        load_yaml(text)
    assert (raised.value.reason, raised.value.line, raised.value.column) == (reason, line, column)


def test_ninety_seven_levels_are_fine() -> None:
    assert load_yaml(ROW + "    v: " + "[" * 97 + "]" * 97 + "\n") is not None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "must be a top-level YAML array of loader patch entries"),
        ("# only a comment\n", "must be a top-level YAML array of loader patch entries"),
        ("id: x\n", "must be a top-level YAML array of loader patch entries"),
        ("- 5\n", "entry 1 must be a mapping (a loader patch entry)"),
        ("- id: a\n- [1]\n", "entry 2 must be a mapping (a loader patch entry)"),
        ("- insert: 5\n", "entry 1: insert must be a list of rows"),
        ("- id: a\n---\n- id: b\n", "expected a single document in the stream, but found more"),
    ],
)
def test_patch_files_dsh_refuses(text: str, reason: str) -> None:
    with pytest.raises(DshYamlError) as raised:
        load_patch_rows(text)
    assert raised.value.reason == reason


def test_a_bom_and_crlf_are_fine() -> None:
    assert load_patch_rows("\ufeff- id: a\r\n  config: {x: 1}\r\n") == [
        {"id": "a", "config": {"x": 1}}
    ]
