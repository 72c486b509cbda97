"""dshweb's one ``formatTokens`` against dsh-context-truth's JavaScript.

:data:`JS_FORMAT_TOKENS` is what the plugin's own ``formatTokens`` (``lib/index.js`` of
github.com/deepseekv41flash/dsh-context-truth 0.1.3, commit ``abdc1f8``; the same function at
``450ac71``) returned under node v20.20.2 for each value when the table was made: the edges
of each unit and rounding step, and the halves where JavaScript's rounding and Python's
part (``toFixed(2)`` rounds the exact binary value half up: 1.125 is ``1.13``, 1.005 is
``1.00``). It is the oracle wherever node is not: scripts/test installs no node.

The plugin is on no registry and its code stays out of this repository (as for the
``told-*`` fixture homes), so the plugin's function itself runs only where
``DSHWEB_CONTEXT_TRUTH`` names a checkout of it and node is on PATH. With node alone,
JavaScript's two roundings the function is made of are checked on every half-way value.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.fold.line_tokens import format_line_tokens, read_line_tokens

JS_FORMAT_TOKENS: tuple[tuple[float, str], ...] = (
    (0, "0"),
    (1, "1"),
    (499.5, "500"),
    (500, "500"),
    (999, "999"),
    (999.5, "1000"),
    (1000, "1K"),
    (1049, "1K"),
    (1050, "1K"),
    (1499, "1K"),
    (1500, "2K"),
    (2500, "3K"),
    (9499, "9K"),
    (9500, "10K"),
    (9950, "10K"),
    (99_499, "99K"),
    (99_500, "100K"),
    (99_950, "100K"),
    (172_437, "172K"),
    (999_499, "999K"),
    (999_500, "1000K"),  # Math.round(999.5): the plugin prints 1000K, not 1.00M
    (999_950, "1000K"),
    (999_999, "1000K"),
    (1_000_000, "1.00M"),
    (1_004_999, "1.00M"),
    (1_005_000, "1.00M"),  # 1.005 is stored just below the half
    (1_015_000, "1.01M"),
    (1_025_000, "1.02M"),
    (1_045_000, "1.04M"),
    (1_048_576, "1.05M"),
    (1_095_000, "1.09M"),
    (1_115_000, "1.11M"),
    (1_125_000, "1.13M"),  # an exact binary half: toFixed goes up, f"{1.125:.2f}" does not
    (1_135_000, "1.14M"),
    (1_145_000, "1.15M"),
    (1_175_000, "1.18M"),
    (1_375_000, "1.38M"),
    (1_625_000, "1.63M"),
    (2_675_000, "2.67M"),
    (9_995_000, "9.99M"),
    (12_345_678, "12.35M"),
    (99_995_000, "100.00M"),
    (-1, "?"),
    (math.nan, "?"),
    (math.inf, "?"),
)
"""``(value, formatTokens(value))`` as the plugin's JavaScript gave them."""

HALVES = (
    tuple(n + 0.5 for n in range(1000))
    + tuple(k * 1000 + 500 for k in range(1000))
    + tuple(1_005_000 + 10_000 * j for j in range(20_000))
)
"""Every half-way value of each rounding step: a unit, a thousand, and a hundredth of a
million up to 200M."""

NODE = shutil.which("node")
CHECKOUT = os.environ.get("DSHWEB_CONTEXT_TRUTH", "")
_FUNCTION = re.compile(r"^function formatTokens\(value\) \{\n.*?^\}$", re.MULTILINE | re.DOTALL)


def _mismatches(said: dict[float, str]) -> list[tuple[float, str, str]]:
    """``(value, javascript, python)`` where the two differ, the first ten."""
    return [
        (v, text, format_line_tokens(v))
        for v, text in said.items()
        if format_line_tokens(v) != text
    ][:10]


def _node(script: str, values: list[float]) -> list[Any]:
    """``script`` run by node on ``values`` (a JSON list of strings, read with ``Number``),
    its stdout read as JSON."""
    assert NODE is not None
    numbers = [
        repr(v) if math.isfinite(v) else {"nan": "NaN", "inf": "Infinity"}[repr(v)] for v in values
    ]
    done = subprocess.run(
        [NODE, "-e", script],
        input=json.dumps(numbers),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result = json.loads(done.stdout)
    assert isinstance(result, list) and len(result) == len(values)
    return result


def test_it_gives_what_the_plugins_javascript_gave() -> None:
    assert _mismatches(dict(JS_FORMAT_TOKENS)) == []


def test_a_figure_reads_back_as_the_tokens_it_names() -> None:
    assert [read_line_tokens(t) for t in ("850", "12K", "1000K", "1.13M", "12.35M")] == [
        850,
        12_000,
        1_000_000,
        1_130_000,
        12_350_000,
    ]
    assert read_line_tokens("under 50K") is None and read_line_tokens("?") is None
    # What a figure names prints as that figure again, but for the two that spell the next
    # unit's first figure in the smaller unit.
    for value, text in JS_FORMAT_TOKENS:
        named = read_line_tokens(text)
        if named is not None and text not in ("1000", "1000K"):
            assert format_line_tokens(named) == text, (value, text, named)


@pytest.mark.skipif(NODE is None, reason="node is not on PATH: JS_FORMAT_TOKENS is the oracle")
def test_javascripts_roundings_on_every_half() -> None:
    """``(v / 1e6).toFixed(2)`` and ``Math.round`` as node computes them, against the
    figure dshweb prints for each half-way value."""
    values = list(HALVES)
    said = _node(
        "const values = JSON.parse(require('fs').readFileSync(0, 'utf8')).map(Number);"
        "process.stdout.write(JSON.stringify(values.map((v) =>"
        " [(v / 1e6).toFixed(2), Math.round(v / 1e3), Math.round(v)])));",
        values,
    )
    wrong = []
    for value, (millions, thousands, units) in zip(values, said, strict=True):
        expected = (
            f"{millions}M" if value >= 1e6 else f"{thousands}K" if value >= 1e3 else f"{units}"
        )
        if format_line_tokens(value) != expected:
            wrong.append((value, expected, format_line_tokens(value)))
    assert wrong[:10] == []


@pytest.mark.skipif(NODE is None, reason="node is not on PATH: JS_FORMAT_TOKENS is the oracle")
@pytest.mark.skipif(
    not (Path(CHECKOUT) / "lib" / "index.js").is_file(),
    reason="DSHWEB_CONTEXT_TRUTH names no checkout of dsh-context-truth (its lib/index.js): "
    "the plugin's own function is not here to run; JS_FORMAT_TOKENS is the oracle",
)
def test_the_plugins_own_function() -> None:
    source = (Path(CHECKOUT) / "lib" / "index.js").read_text(encoding="utf-8")
    function = _FUNCTION.search(source)
    assert function is not None, "no `function formatTokens(value) {…}` in lib/index.js"
    values = [v for v, _ in JS_FORMAT_TOKENS] + list(HALVES)
    said = _node(
        function.group(0) + "\nconst values = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "\nprocess.stdout.write(JSON.stringify(values.map((v) => formatTokens(Number(v)))));",
        values,
    )
    assert _mismatches(dict(zip(values, map(str, said), strict=True))) == []
