"""The ring's figures (dashboard/display), percent and bands (core/fold/gauge.py), and
every range the pages show (core/spans.py): pure, table-driven."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.utils import translation

from dshweb.core.fold.forecast import Forecast
from dshweb.core.fold.gauge import Band, context_band, context_percent
from dshweb.core.fold.known import Known
from dshweb.core.fold.meter import SurfaceNode
from dshweb.core.fold.preview import CompactionPreview, Condition
from dshweb.core.spans import span_text
from dshweb.sessions.display.figures import (
    cache_hit_ratio,
    dom_id,
    forecast_text,
    format_page_tokens,
    format_ratio,
    pass_in,
)
from dshweb.sessions.display.ring import breakdown_parts


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (0, "0"),
        (7, "7"),
        (999, "999"),
        (1000, "1.0K"),
        (1049, "1.0K"),
        (1050, "1.1K"),  # half-up
        (1234, "1.2K"),
        (1250, "1.3K"),  # half-up, where banker's rounding would give 1.2K
        (1350, "1.4K"),
        (9949, "9.9K"),
        (9950, "10K"),  # rounds up into the next step: never "10.0K"
        (9999, "10K"),
        (10_000, "10K"),
        (10_499, "10K"),
        (10_500, "11K"),
        (12_500, "13K"),  # half-up
        (678_464, "678K"),
        (999_499, "999K"),
        (999_500, "1.0M"),  # never "1000K"
        (999_999, "1.0M"),
        (1_000_000, "1.0M"),
        (1_049_999, "1.0M"),
        (1_050_000, "1.1M"),
        (1_250_000, "1.3M"),
        (12_345_678, "12.3M"),
        (-1234, "-1.2K"),
    ],
)
def test_format_page_tokens(count: int, shown: str) -> None:
    assert format_page_tokens(count) == shown


@pytest.mark.parametrize(
    ("used", "window", "percent"),
    [
        (5892, 1_000_000, 1),
        (4999, 1_000_000, 0),
        (5000, 1_000_000, 1),  # exactly .5 rounds up
        (15_000, 1_000_000, 2),  # 1.5 → 2
        (25_000, 1_000_000, 3),  # 2.5 → 3, where banker's rounding gives 2
        (9318, 24_000, 39),
        (13_462, 40_000, 34),
        (40_000, 40_000, 100),
        (50_000, 40_000, 100),  # capped
        (0, 40_000, 0),
        (10, None, None),
        (None, 40_000, None),
        (10, 0, None),
    ],
)
def test_context_percent(used: int | None, window: int | None, percent: int | None) -> None:
    assert context_percent(used, window) == percent


@pytest.mark.parametrize(
    ("used", "threshold", "band"),
    [
        (0, 1000, Band.AMPLE),
        (499, 1000, Band.AMPLE),
        (500, 1000, Band.MODERATE),
        (849, 1000, Band.MODERATE),
        (850, 1000, Band.TIGHT),
        (999, 1000, Band.TIGHT),
        (1000, 1000, Band.CRITICAL),
        (5000, 1000, Band.CRITICAL),
        (5892, 678_464, Band.AMPLE),
        (339_232, 678_464, Band.MODERATE),
        (100, None, Band.UNKNOWN),
        (None, 1000, Band.UNKNOWN),
        (100, 0, Band.UNKNOWN),
    ],
)
def test_context_band(used: int | None, threshold: int | None, band: Band) -> None:
    assert context_band(used, threshold) is band


@pytest.mark.parametrize(
    ("usage", "ratio"),
    [
        ({"uncachedInputTokens": 5029, "cacheReadTokens": 832, "cacheWriteTokens": 0}, 832 / 5861),
        ({"uncachedInputTokens": 10, "cacheReadTokens": 30, "cacheWriteTokens": 60}, 0.3),
        ({"uncachedInputTokens": 0, "cacheReadTokens": 0, "cacheWriteTokens": 0}, None),
        ({}, None),
    ],
)
def test_cache_hit_ratio(usage: dict[str, int], ratio: float | None) -> None:
    assert cache_hit_ratio(usage) == ratio


@pytest.mark.parametrize(
    ("ratio", "shown"),
    [
        (None, "—"),
        (0.0, "0.0%"),
        (832 / 5861, "14.2%"),
        (0.12345, "12.3%"),
        (0.1235, "12.4%"),
        (1.0, "100.0%"),
    ],
)
def test_format_ratio(ratio: float | None, shown: str) -> None:
    assert format_ratio(ratio) == shown


def test_dom_id_is_stable_and_unique() -> None:
    assert dom_id("session", "quick-001") == "session-quick-001"
    assert dom_id("session", "a b") == "session-a_20_b"
    assert dom_id("session", "a_20_b") != dom_id("session", "a b")
    assert dom_id("session", "数据") == "session-_6570__636e_"


def test_breakdown_parts() -> None:
    parts = breakdown_parts({"systemTokens": 1, "toolsTokens": 2, "messageTokens": 1})
    assert [(p.kind, p.tokens, p.share) for p in parts] == [
        ("system", 1, 25.0),
        ("tools", 2, 50.0),
        ("messages", 1, 25.0),
    ]
    assert all(p.share == 0.0 for p in breakdown_parts({}))


@pytest.mark.parametrize(
    ("used", "previous", "band"),
    [
        (900, Band.TIGHT, Band.TIGHT),  # 0.90: still tight
        (820, Band.TIGHT, Band.TIGHT),  # 0.82: inside the 0.05 margin below 0.85
        (800, Band.TIGHT, Band.TIGHT),  # 0.80: exactly on the margin holds
        (799, Band.TIGHT, Band.MODERATE),  # past the margin: falls
        (960, Band.CRITICAL, Band.CRITICAL),
        (940, Band.CRITICAL, Band.TIGHT),
        (300, Band.CRITICAL, Band.AMPLE),  # a fold: straight down
        (460, Band.MODERATE, Band.MODERATE),
        (449, Band.MODERATE, Band.AMPLE),
        (850, Band.MODERATE, Band.TIGHT),  # rising is immediate
        (1000, Band.AMPLE, Band.CRITICAL),
        (400, Band.UNKNOWN, Band.AMPLE),
    ],
)
def test_band_falls_only_past_the_hysteresis(used: int, previous: Band, band: Band) -> None:
    assert context_band(used, 1000, previous) is band


@pytest.mark.parametrize(
    ("forecast", "text"),
    [
        (Forecast(6, 4, 9, 2.6), "Fold in about 6 steps (4–9), about 3 min"),
        (Forecast(1, 1, 1, 0.2), "Fold due at the next step"),
        (Forecast(2, 2, 2, 0.5), "Fold in about 2 steps, under a minute"),
        (Forecast(40, 30, 55, 300.0), "Fold in about 40 steps (30–55), about 5.0 h"),
        (Forecast(6, 5, 7, None), "Fold in about 6 steps (5–7)"),
        (Forecast(6, 5, 5, None), "Fold in about 6 steps (5)"),  # a span of one value
        (Forecast(reason="too few steps"), "No fold forecast: too few steps"),
        (Forecast(6, 6, None, None), "Fold in 6 or more steps"),  # nothing bounds the point
        (Forecast(1, 1, None, 0.4), "Fold in 1 or more step, under a minute"),
    ],
)
def test_the_forecast_in_words(forecast: Forecast, text: str) -> None:
    assert forecast_text(forecast) == text


@pytest.mark.parametrize(
    ("forecast", "text"),
    [
        (Forecast(20, 17, 25, 2.0), "Summary in about 20 steps (17–25), about 2 min"),
        (Forecast(1, 1, 1, 0.2), "Summary due at the next step"),
        (Forecast(9, 9, None, None), "Summary in 9 or more steps"),
        (Forecast(reason="not growing"), "No summary forecast: not growing"),
    ],
)
def test_the_summary_forecast_in_words(forecast: Forecast, text: str) -> None:
    assert forecast_text(forecast, summary=True) == text


@pytest.mark.parametrize(
    ("forecast", "text"),
    [
        (Forecast(6, 4, 9, 2.6), "fold in ~6 steps"),
        (Forecast(1, 1, 1, 0.2), "fold at the next step"),
        (Forecast(1, 1, 2, 0.2), "fold in ~1 step"),
        (Forecast(reason="idle"), "no fold forecast"),
    ],
)
def test_the_lists_fold_in(forecast: Forecast, text: str) -> None:
    assert pass_in(forecast) == text


@pytest.mark.parametrize(
    ("low", "high", "shown"),
    [("4", "9", "4–9"), ("9,759", "9,759", "9,759"), ("1.2K", "1.2K", "1.2K"), ("0", "1", "0–1")],
)
def test_a_span_reads_as_one_figure_when_its_ends_read_the_same(
    low: str, high: str, shown: str
) -> None:
    assert span_text(low, high) == shown


_NODE = SurfaceNode(183, "user/message", 178, "an excerpt")
SPANS = [
    # (template, context, what it says of a span of one value, of two)
    (
        "dashboard/_compaction_preview_one.html",
        {"preview": CompactionPreview("manual", first=_NODE, last=_NODE, after=(9_759, 9_759))},
        "Context after: about 9,759 tokens (",
        {"preview": CompactionPreview("manual", first=_NODE, last=_NODE, after=(9_593, 9_759))},
        "Context after: about 9,593–9,759 tokens (",
    ),
    (
        "dashboard/_known.html",
        {"known": Known(12_000, 12_000, "profile"), "unit": "tokens"},
        "12,000 tokens",
        {"known": Known(11_000, 12_000, "inferred"), "unit": "tokens"},
        "11,000–12,000 tokens",
    ),
    (
        "dashboard/_fold_condition.html",
        {"condition": Condition("retainTokens", 2_049, 2_049)},
        "if the engine keeps 2,049 tokens",
        {"condition": Condition("retainTokens", 2_039, 2_049)},
        "if the engine keeps 2,039–2,049 tokens",
    ),
    (
        "dashboard/_fold_condition.html",
        {"condition": Condition("thresholdTokens", 12_000, 12_000)},
        "if the compaction point is 12,000 tokens",
        {"condition": Condition("thresholdTokens", 11_000, 12_000)},
        "if the compaction point is 11,000–12,000 tokens",
    ),
    (
        "dashboard/_fold_condition.html",
        {"condition": Condition("pruneThreshold", 8_192, 8_192)},
        "if the pruner cuts results over 8,192 characters",
        {"condition": Condition("pruneThreshold", 4_096, 8_192)},
        "if the pruner cuts results over 4,096–8,192 characters",
    ),
]


@pytest.mark.parametrize(("template", "one", "one_said", "two", "two_said"), SPANS)
def test_every_range_a_page_shows_reads_as_one_figure_when_its_ends_are_equal(
    template: str, one: dict[str, object], one_said: str, two: dict[str, object], two_said: str
) -> None:
    """The fold preview's context after, a setting's known value, an outcome's condition:
    "about 9,759 tokens", never "about 9,759–9,759 tokens"."""
    with translation.override("en"):
        said_one, said_two = (" ".join(render_to_string(template, c).split()) for c in (one, two))
    assert one_said in said_one and "–" not in said_one, said_one
    assert two_said in said_two, said_two
