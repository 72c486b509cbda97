"""The occupancy line, byte for byte, and the pace samples behind it.

``SOURCE_0_1_3`` expectations come from dsh-context-truth's lib/index.js at commit abdc1f8
(0.1.3): its templates, and the assertions of its own test/index.test.js, reused below as
data. ``README`` expectations add the clauses the later README quotes verbatim.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.fold.gauge import Band, round_half_up, settle_band
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.fold.pace import (
    MAX_SAMPLES,
    PaceCollector,
    pace_estimate,
    pace_samples,
    rung_below,
    settle_rung,
)
from dshweb.core.fold.session import SessionTracker, take_snapshot
from dshweb.core.log.home import LogFile
from dshweb.core.profile.effective import DEFAULT_RULE, BandRule, EngineConfig, band_rule
from dshweb.core.profile.plugins import CONTEXT_TRUTH_SCHEMA
from dshweb.core.profile.schema import validate
from dshweb.core.settings.occupancy.figures import display_step, headroom_step
from dshweb.core.settings.occupancy.line import (
    LineInput,
    LineState,
    line_input,
    occupancy_line,
    render_lines,
)
from dshweb.core.settings.occupancy.line_settings import LineSettings, Wording, wording_for
from tests.conftest import all_homes, session_log_paths
from tests.support.logbuilder import log_records, typed

WINDOW = 1_000_000
MAX_TOKENS = 256_000
THRESHOLD = 678_464  # min(0.8 × 1M, 1M − 256K − 64K)

OLD = LineSettings(wording=Wording.SOURCE_0_1_3)
OLD_ZH = LineSettings(wording=Wording.SOURCE_0_1_3, language="zh")
NEW = LineSettings()
NEW_ZH = LineSettings(language="zh")


def line(
    used: int | None,
    settings: LineSettings = NEW,
    *,
    window: int | None = WINDOW,
    samples: tuple[int, ...] = (),
    state: LineState | None = None,
) -> str:
    return occupancy_line(LineInput(used, window, MAX_TOKENS, samples), settings, state).text


# -- the 0.1.3 source, byte for byte -------------------------------------------------------

AUTH_EN = (
    "This host-measured line is the only authority on context pressure; never estimate it "
    "from the conversation's length."
)
AUTH_ZH = "本行由宿主实测，是上下文压力的唯一权威——不要凭对话长度或轮数自行估计。"
STALE_EN = (
    "Earlier claims that context is nearly exhausted — including ones inside compacted "
    "checkpoints — are stale."
)
STALE_ZH = '此前任何"上下文快满了"的说法（含压缩检查点里的）都已作废。'
POINT_EN = " Automatic compaction fires at 678K (68% of the window)."
POINT_ZH = " 自动压缩阈值 678K（窗口的 68%）。"
AMPLE_EN = (
    " Context is NOT scarce — do not wrap up, hand off to a subagent, or narrow scope for "
    "context reasons."
)
AMPLE_ZH = ' 上下文不紧张——不要因为"上下文不够"而收尾、交接子代理或缩小范围。'
MODERATE_EN = (
    " There is still real headroom — keep going, and keep durable notes or commits current "
    "as you work."
)
MODERATE_ZH = " 仍有充足余量，继续推进即可，顺手把关键状态写进文档或提交。"
STOP_EN = (
    " Headroom is genuinely small — finish the current step, land durable state, then hand off."
)
STOP_ZH = " 余量确实不多了——收完当前这一步、把状态落到磁盘，再考虑交接。"
CRITICAL_EN = (
    " At or past the automatic compaction point — expect earlier turns to be folded; keep "
    "nothing critical only in this window."
)
CRITICAL_ZH = " 已到或越过自动压缩点——接下来可能发生压缩折叠，别让关键状态只存在于本窗口。"

SOURCE_LINES = [
    (
        172_437,
        OLD,
        "Context occupancy (host-measured): 150K / 1.00M tokens used (15%)."
        + POINT_EN
        + " About 500K tokens of headroom remain before it."
        + AMPLE_EN
        + f" {AUTH_EN} {STALE_EN}",
    ),
    (
        400_000,
        OLD,
        "Context occupancy (host-measured): 400K / 1.00M tokens used (40%)."
        + POINT_EN
        + " About 250K tokens of headroom remain before it."
        + MODERATE_EN
        + f" {AUTH_EN}",
    ),
    (
        610_000,
        OLD,
        "Context occupancy (host-measured): 600K / 1.00M tokens used (60%)."
        + POINT_EN
        + " About 65K tokens of headroom remain before it."
        + STOP_EN
        + f" {AUTH_EN}",
    ),
    (
        700_000,
        OLD,
        "Context occupancy (host-measured): 700K / 1.00M tokens used (70%)."
        + POINT_EN
        + CRITICAL_EN
        + f" {AUTH_EN}",
    ),
    (
        172_437,
        OLD_ZH,
        "上下文实况（宿主实测）：已用 150K / 1.00M（15%）。"
        + POINT_ZH
        + " 距阈值还有约 500K tokens。"
        + AMPLE_ZH
        + f" {AUTH_ZH} {STALE_ZH}",
    ),
    (
        400_000,
        OLD_ZH,
        "上下文实况（宿主实测）：已用 400K / 1.00M（40%）。"
        + POINT_ZH
        + " 距阈值还有约 250K tokens。"
        + MODERATE_ZH
        + f" {AUTH_ZH}",
    ),
    (
        610_000,
        OLD_ZH,
        "上下文实况（宿主实测）：已用 600K / 1.00M（60%）。"
        + POINT_ZH
        + " 距阈值还有约 65K tokens。"
        + STOP_ZH
        + f" {AUTH_ZH}",
    ),
    (
        700_000,
        OLD_ZH,
        "上下文实况（宿主实测）：已用 700K / 1.00M（70%）。"
        + POINT_ZH
        + CRITICAL_ZH
        + f" {AUTH_ZH}",
    ),
    (
        None,
        OLD,
        "Context occupancy: no reading yet in this session. Do not claim context is scarce on "
        f"that basis. {AUTH_EN}",
    ),
    (None, OLD_ZH, f"上下文实况：本会话尚未取到用量读数。不要据此声称上下文紧张。 {AUTH_ZH}"),
]


@pytest.mark.parametrize(("used", "settings", "expected"), SOURCE_LINES)
def test_each_band_renders_the_source_text(
    used: int | None, settings: LineSettings, expected: str
) -> None:
    assert line(used, settings) == expected


HEAD_RE = r"Context occupancy \(host-measured\): "

# Assertions of the source's own test/index.test.js (abdc1f8), as (used, language, pattern,
# should match, holds for the README wording too).
SOURCE_TEST_PATTERNS = [
    (172_437, "en", HEAD_RE + r"150K / 1\.00M tokens used \(15%\)", True, True),
    (172_437, "en", r"Automatic compaction fires at 678K \(68% of the window\)", True, True),
    (172_437, "en", r"About 500K tokens of headroom remain", True, True),
    (172_437, "en", r"Context is NOT scarce", True, True),
    (172_437, "en", r"only authority on context pressure", True, True),
    (172_437, "en", r"are stale", True, True),
    (610_000, "en", r"Headroom is genuinely small", True, False),  # README: tight is silent
    (610_000, "en", r"Context is NOT scarce", False, True),
    (610_000, "en", r"About 65K tokens of headroom remain", True, False),  # README: 10K floor
    (700_000, "en", r"At or past the automatic compaction point", True, True),
    (35_000, "en", HEAD_RE + r"under 50K / 1\.00M tokens used \(under 5%\)", True, True),
    (35_000, "en", r": 0 / 1\.00M", False, True),
    (35_000, "en", r"About 600K tokens of headroom remain", True, True),
    (0, "en", r": 0 / 1\.00M tokens used \(0%\)", True, True),
    (35_000, "zh", r"已用 不足 50K / 1\.00M（不足 5%）", True, True),
]  # fmt: skip


@pytest.mark.parametrize(("used", "language", "pattern", "matches", "both"), SOURCE_TEST_PATTERNS)
@pytest.mark.parametrize("wording", list(Wording))
def test_the_source_suites_expectations(
    used: int, language: str, pattern: str, matches: bool, both: bool, wording: Wording
) -> None:
    if wording is Wording.README and not both:
        pytest.skip("0.1.3 only")
    settings = LineSettings(language=language, wording=wording)
    assert bool(re.search(pattern, line(used, settings))) is matches


def test_a_missing_window_still_renders_a_usable_line() -> None:
    assert "no reading yet in this session" in line(5000, OLD, window=None)
    assert "no reading yet in this session" in line(5000, OLD, window=0)


def test_language_and_switches_are_honoured() -> None:
    settings = LineSettings(
        language="zh", stale_claim_clause=False, authoritative=False, wording=Wording.SOURCE_0_1_3
    )
    rendered = line(172_437, settings)
    assert "上下文实况（宿主实测）" in rendered
    assert "唯一权威" not in rendered
    assert "作废" not in rendered


def test_a_floored_headroom_names_its_own_step() -> None:
    # The source suite: 2464 floors to one full 2K step; only a reading inside it says "Under".
    assert headroom_step(2464, WINDOW, OLD) == 2000
    assert (
        occupancy_line(LineInput(THRESHOLD - 2464, WINDOW, MAX_TOKENS), OLD).headroom_shown == 2000
    )
    floored = occupancy_line(LineInput(THRESHOLD - 1500, WINDOW, MAX_TOKENS), OLD)
    assert floored.headroom_shown == 0
    assert "Under 2K tokens of headroom remain before it." in floored.text
    assert "less than 1K" not in floored.text


def test_the_headroom_never_promises_more_room_than_there_is() -> None:
    for settings in (OLD, NEW):
        for used in (172_437, 400_000, 600_000, 610_000, 650_000, 670_000, 678_463):
            shown = occupancy_line(LineInput(used, WINDOW, MAX_TOKENS), settings).headroom_shown
            assert shown is not None
            assert shown <= THRESHOLD - used < shown + 50_000
        for headroom in (120_000, 65_000, 28_464, 8_464):
            step = headroom_step(headroom, WINDOW, settings)
            assert headroom - (headroom // step) * step < 12_000
    assert occupancy_line(LineInput(172_437, WINDOW, MAX_TOKENS), OLD).headroom_shown == 500_000
    assert occupancy_line(LineInput(610_000, WINDOW, MAX_TOKENS), OLD).headroom_shown == 65_000


# -- JavaScript arithmetic -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "rounded"),
    [(0.5, 1), (1.5, 2), (2.5, 3), (-0.5, 0), (-1.5, -1), (0.49999999999999994, 0), (67.8464, 68)],
)
def test_round_half_up_is_math_round(value: float, rounded: int) -> None:
    assert round_half_up(value) == rounded


@pytest.mark.parametrize(
    ("window", "quantum", "step"),
    [
        (WINDOW, 5, 50_000),
        (128_000, 5, 6_400),
        (10_000, 5, 1000),
        (WINDOW, 0, 1),
        (WINDOW, 2.5, 25_000),
    ],
)
def test_display_step(window: int, quantum: float, step: int) -> None:
    assert display_step(window, quantum) == step


HEAD = "Context occupancy (host-measured): "

# -- quantisation edges --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "window", "settings", "head"),
    [
        (1, WINDOW, OLD, HEAD + "under 50K / 1.00M tokens used (under 5%)."),
        (49_999, WINDOW, OLD, HEAD + "under 50K / 1.00M tokens used (under 5%)."),
        (50_000, WINDOW, OLD, HEAD + "50K / 1.00M tokens used (5%)."),
        (0, WINDOW, OLD, HEAD + "0 / 1.00M tokens used (0%)."),
        (6_000, 128_000, OLD, HEAD + "under 6K / 128K tokens used (under 5%)."),
        (6_400, 128_000, OLD, HEAD + "6K / 128K tokens used (5%)."),
        (300, 10_000, OLD, HEAD + "under 1K / 10K tokens used (under 10%)."),
        (49_999, WINDOW, OLD_ZH, "上下文实况（宿主实测）：已用 不足 50K / 1.00M（不足 5%）。"),
        (350_000, WINDOW, NEW, HEAD + "350K / 1.00M tokens used (35%)."),
    ],
)
def test_under_one_step_renders_under(
    used: int, window: int, settings: LineSettings, head: str
) -> None:
    assert line(used, settings, window=window).startswith(head)


def test_nearby_readings_are_byte_identical() -> None:
    for settings in (OLD, NEW):
        assert line(172_437, settings) == line(172_500, settings)
        assert line(172_437, settings) != line(223_000, settings)


# -- hysteresis ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "previous", "band"),
    [
        (0.2, None, Band.AMPLE),
        (0.6, Band.AMPLE, Band.MODERATE),
        (0.9, Band.MODERATE, Band.TIGHT),
        (1.05, Band.TIGHT, Band.CRITICAL),
        (0.99, Band.CRITICAL, Band.CRITICAL),
        (0.1, Band.CRITICAL, Band.AMPLE),
        (0.52, Band.MODERATE, Band.MODERATE),
        (0.4, Band.MODERATE, Band.AMPLE),
        (0.46, Band.MODERATE, Band.MODERATE),
        (0.45, Band.MODERATE, Band.AMPLE),  # the source leaves at ≤ floor − hysteresis
        (0.81, Band.TIGHT, Band.TIGHT),
        (0.79, Band.TIGHT, Band.MODERATE),
        (0.3, Band.UNKNOWN, Band.AMPLE),
    ],
)
def test_hysteresis_like_the_source(ratio: float, previous: Band | None, band: Band) -> None:
    assert settle_band(ratio, previous, OLD.rule) == band


def test_the_line_reads_its_band_edges_as_the_fold_does() -> None:
    """One reader of ``moderateAt``, ``tightAt`` and ``hysteresis``: the line's settings
    and the ring's rule take the same values, an invalid one as its default."""
    raw = {"moderateAt": 0.6, "tightAt": 0.9, "hysteresis": 1.5, "language": "zh"}
    settings = LineSettings.from_config(validate(CONTEXT_TRUTH_SCHEMA, raw).config)
    assert settings.rule == band_rule(raw) == BandRule(0.6, 0.9, 0.05)
    assert settings.language == "zh"
    assert LineSettings().rule == DEFAULT_RULE == LineSettings.from_config({}).rule


def test_the_state_carries_the_band_across_renders() -> None:
    used = [300_000, 345_000, 330_000, 300_000, 580_000, 560_000, 520_000, 700_000, 660_000]
    lines = render_lines([LineInput(u, WINDOW, MAX_TOKENS) for u in used], NEW)
    assert [ln.band for ln in lines] == [
        Band.AMPLE,
        Band.MODERATE,  # 0.508
        Band.MODERATE,  # 0.486: inside the margin
        Band.AMPLE,  # 0.442
        Band.TIGHT,  # 0.855
        Band.TIGHT,  # 0.825
        Band.MODERATE,  # 0.766
        Band.CRITICAL,
        Band.CRITICAL,  # 0.973: the fold has not landed
    ]


def test_edges_in_tokens_for_the_ring() -> None:
    result = occupancy_line(LineInput(300_000, WINDOW, MAX_TOKENS), NEW)
    assert result.threshold == THRESHOLD
    assert result.edges is not None
    assert (result.edges.moderate, result.edges.tight, result.edges.critical) == (
        THRESHOLD * 0.5,
        THRESHOLD * 0.85,
        THRESHOLD,
    )
    no_point = occupancy_line(
        LineInput(300_000, WINDOW, MAX_TOKENS),
        LineSettings(show_point=False, wording=Wording.SOURCE_0_1_3),
    )
    assert no_point.threshold is None and no_point.edges is not None
    assert no_point.edges.critical == WINDOW
    assert no_point.text == (
        "Context occupancy (host-measured): 300K / 1.00M tokens used (30%)."
        + AMPLE_EN
        + f" {AUTH_EN} {STALE_EN}"
    )


def test_reserved_completion_setting_overrides_the_header() -> None:
    settings = LineSettings(reserved_completion_tokens=0)
    assert occupancy_line(LineInput(100, WINDOW, MAX_TOKENS), settings).threshold == 800_000
    tiny = occupancy_line(LineInput(100, 100_000, 64_000), NEW)
    assert tiny.threshold is None  # no pressure budget: no point, like compaction-basic


# -- the README wording --------------------------------------------------------------------

NEW_AUTH_EN = (
    "Background telemetry from the host, and the only authority on context pressure: do not "
    "mention it, do not estimate or count it down yourself — it is restated whenever it "
    "changes — and take no action about compaction; the host folds between steps automatically."
)
NEW_AUTH_ZH = (
    "这是宿主的后台遥测，也是上下文压力的唯一权威：不要提及它，不要自行估算或倒数——"
    "它一有变化就会重新给出——也不要为压缩采取任何行动；宿主会在步骤之间自动折叠。"
)
FOLD_TIGHT_EN = (
    " The fold is routine, not the end of the window: older turns become a summary and work "
    "continues after it."
)
FOLD_CRITICAL_EN = " The window is not exhausted — work continues after the fold."
PACE = (20_000,) * 5

README_LINES = [
    (
        172_437,
        NEW,
        "Context occupancy (host-measured): 150K / 1.00M tokens used (15%)."
        + POINT_EN
        + " About 500K tokens of headroom remain before it. About 800K of the window is still free."
        + AMPLE_EN
        + f" {NEW_AUTH_EN} {STALE_EN}",
    ),
    (
        400_000,
        NEW,
        "Context occupancy (host-measured): 400K / 1.00M tokens used (40%)."
        + POINT_EN
        + " About 250K tokens of headroom remain before it. About 600K of the window is still free."
        + MODERATE_EN
        + f" {NEW_AUTH_EN}",
    ),
    (
        610_000,
        NEW,
        "Context occupancy (host-measured): 600K / 1.00M tokens used (60%)."
        + POINT_EN
        + " About 60K tokens of headroom remain before it."
        + " At this session's recent rate that is roughly 3 more steps."
        + " About 350K of the window is still free."
        + FOLD_TIGHT_EN
        + f" {NEW_AUTH_EN}",
    ),
    (
        670_000,
        NEW,
        "Context occupancy (host-measured): 650K / 1.00M tokens used (65%)."
        + POINT_EN
        + " Under 10K tokens of headroom remain before it."
        + " About 300K of the window is still free."
        + FOLD_TIGHT_EN
        + f" {NEW_AUTH_EN}",
    ),
    (
        700_000,
        NEW,
        "Context occupancy (host-measured): 700K / 1.00M tokens used (70%)."
        + POINT_EN
        + " About 300K of the window is still free."
        + CRITICAL_EN
        + FOLD_CRITICAL_EN
        + f" {NEW_AUTH_EN}",
    ),
    (
        172_437,
        NEW_ZH,
        "上下文实况（宿主实测）：已用 150K / 1.00M（15%）。"
        + POINT_ZH
        + " 距阈值还有约 500K tokens。 窗口还有约 800K 未用。"
        + AMPLE_ZH
        + f" {NEW_AUTH_ZH} {STALE_ZH}",
    ),
    (
        400_000,
        NEW_ZH,
        "上下文实况（宿主实测）：已用 400K / 1.00M（40%）。"
        + POINT_ZH
        + " 距阈值还有约 250K tokens。 窗口还有约 600K 未用。"
        + MODERATE_ZH
        + f" {NEW_AUTH_ZH}",
    ),
    (
        610_000,
        NEW_ZH,
        "上下文实况（宿主实测）：已用 600K / 1.00M（60%）。"
        + POINT_ZH
        + " 距阈值还有约 60K tokens。 按本会话近来的速度，约合 3 步。 窗口还有约 350K 未用。"
        + " 折叠是例行操作，不是窗口的尽头：较早的轮次会变成摘要，之后工作照常继续。"
        + f" {NEW_AUTH_ZH}",
    ),
    (
        700_000,
        NEW_ZH,
        "上下文实况（宿主实测）：已用 700K / 1.00M（70%）。"
        + POINT_ZH
        + " 窗口还有约 300K 未用。"
        + CRITICAL_ZH
        + " 窗口并未耗尽——折叠之后工作照常继续。"
        + f" {NEW_AUTH_ZH}",
    ),
]


@pytest.mark.parametrize(("used", "settings", "expected"), README_LINES)
def test_each_band_in_the_readme_wording(used: int, settings: LineSettings, expected: str) -> None:
    assert line(used, settings, samples=PACE) == expected


def test_readme_quotes_appear_verbatim() -> None:
    tight = line(610_000, samples=PACE)
    for quote in (
        "The fold is routine, not the end of the window: older turns become a summary and "
        "work continues after it",
        "Background telemetry from the host, and the only authority on context pressure: do "
        "not mention it, do not estimate or count it down yourself — it is restated whenever "
        "it changes — and take no action about compaction; the host folds between steps "
        "automatically.",
        "of the window is still free",
        "At this session's recent rate that is roughly ",
    ):
        assert quote in tight
    assert "The window is not exhausted — work continues after the fold." in line(700_000)


@pytest.mark.parametrize(
    ("changes", "present", "absent"),
    [
        ({"fold_clause": False}, [], ["The fold is routine"]),
        ({"free_clause": False}, [], ["of the window is still free"]),
        ({"pace_estimate": False}, [], ["recent rate"]),
        ({"tight_advice": "stop"}, [STOP_EN.strip()], []),
        ({"tight_advice": "inform"}, ["costs one summarizer call"], ["Headroom is genuinely"]),
        ({"authoritative": False}, [], ["only authority"]),
    ],
)
def test_readme_switches(changes: dict[str, Any], present: list[str], absent: list[str]) -> None:
    text = line(610_000, LineSettings(**changes), samples=PACE)
    for piece in present:
        assert piece in text
    for piece in absent:
        assert piece not in text


def test_readme_free_window_under_one_step() -> None:
    assert "Under 50K of the window is still free." in line(960_000, window=WINDOW)
    assert "窗口未用部分不足 50K。" in line(960_000, NEW_ZH)
    assert "About 0 of the window is still free." in line(WINDOW)


@pytest.mark.parametrize(
    ("headroom", "shown"),
    [
        (128_000, "About 120K"),
        (80_000, "About 80K"),
        (79_999, "About 70K"),
        (40_000, "About 40K"),
        (39_999, "About 30K"),
        (10_000, "About 10K"),
        (9_999, "Under 10K"),
        (1, "Under 10K"),
    ],
)
def test_headroom_floor_near_the_point(headroom: int, shown: str) -> None:
    text = line(THRESHOLD - headroom, samples=())
    assert f"{shown} tokens of headroom remain before it." in text


def test_the_floor_halves_the_recommits_of_a_walk_to_the_point() -> None:
    # The README: "Over a walk from 128K of headroom to zero, the line re-commits 11 times
    # instead of 23" (counting the headroom figure's changes).
    def changes(settings: LineSettings) -> int:
        shown = []
        for headroom in range(128_000, -1, -250):
            result = occupancy_line(LineInput(THRESHOLD - headroom, WINDOW, MAX_TOKENS), settings)
            shown.append((result.headroom_shown, result.headroom != 0))
        return sum(1 for a, b in itertools.pairwise(shown) if a != b)

    assert changes(NEW) == 11
    assert changes(OLD) == 25


def test_settings_from_a_validated_config() -> None:
    config = validate(
        CONTEXT_TRUTH_SCHEMA, {"language": "zh", "tightAdvice": "stop", "paceMargin": 0.5}
    )
    settings = LineSettings.from_config(config.config)
    assert settings == LineSettings(language="zh", tight_advice="stop", pace_margin=0.5)
    assert LineSettings.from_config({}, wording=Wording.SOURCE_0_1_3) == OLD


# -- pace rungs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "rung"),
    [
        (0.99, None),
        (1, 1),
        (1.99, 1),
        (2, 2),
        (4.99, 3),
        (5, 5),
        (7.99, 5),
        (8, 8),
        (12.9, 8),
        (13, 13),
        (19.9, 13),
        (20, 20),
        (38, 20),
    ],
)
def test_rungs_round_down(steps: float, rung: int | None) -> None:
    assert rung_below(steps) == rung


@pytest.mark.parametrize(
    ("steps", "previous", "rung"),
    [
        (4.0, 8, 3),  # downward at once
        (0.5, 3, None),  # under one step: no promise at all
        (5.5, 3, 3),  # 5 × 1.25 = 6.25 not cleared
        (6.25, 3, 5),
        (9.0, 2, 5),  # 8 × 1.25 = 10 not cleared, 5 × 1.25 is
        (10.0, 2, 8),
        (23.0, 20, 20),  # the straddle that flipped the old 21/34 line stays put
        (38.0, 20, 20),
        (22.0, 13, 13),
        (25.0, 13, 20),
        (7.0, None, 5),  # nothing shown before: the plain rung
    ],
)
def test_rungs_climb_only_past_the_margin(steps: float, previous: int | None, rung: int) -> None:
    assert settle_rung(steps, previous, 0.25) == rung


def test_pace_estimate_needs_samples_and_takes_the_median() -> None:
    def estimate(samples: tuple[int, ...], **kw: Any) -> object:
        args: dict[str, Any] = {"keep": 16, "need": 3, "margin": 0.25, "previous": None}
        args.update(kw)
        return pace_estimate(headroom=60_000, samples=samples, **args)

    assert estimate((10_000, 10_000)) is None
    result = estimate((10_000, 30_000, 10_000, 90_000))  # one big dump cannot drag it
    assert result is not None and getattr(result, "median", None) == 20_000
    assert getattr(result, "rung", None) == 3
    kept = estimate((1, 1, 1, 1, 10_000, 10_000, 10_000), keep=3)
    assert getattr(kept, "samples", None) == 3 and getattr(kept, "rung", None) == 5
    assert estimate((0, 0, 0)) is None


@pytest.mark.parametrize(
    ("sample", "clause"),
    [
        (60_000, "roughly 1 more step."),
        (30_000, "roughly 2 more steps."),
        (10_000, "roughly 5 more steps."),
        (1_000, "roughly 20+ more steps."),
        (70_000, None),
    ],
)
def test_pace_clause_in_the_tight_band(sample: int, clause: str | None) -> None:
    text = line(610_000, samples=(sample,) * 3)  # 68,464 tokens of headroom
    if clause is None:
        assert "recent rate" not in text
    else:
        assert f"At this session's recent rate that is {clause}" in text


def test_pace_rung_is_kept_in_the_state() -> None:
    first = occupancy_line(LineInput(610_000, WINDOW, MAX_TOKENS, (20_000,) * 3), NEW)
    assert first.pace is not None and first.state == LineState(Band.TIGHT, 3)
    # 68,464 / 13,000 = 5.27: the raw rung is 5, but 5 × 1.25 is not cleared from 3.
    held = occupancy_line(LineInput(610_000, WINDOW, MAX_TOKENS, (13_000,) * 3), NEW, first.state)
    assert held.state.rung == 3
    assert "roughly 3 more steps" in held.text
    calm = occupancy_line(LineInput(100_000, WINDOW, MAX_TOKENS, (13_000,) * 3), NEW)
    assert "recent rate" not in calm.text  # only tight and critical speak of pace


def test_critical_held_by_hysteresis_keeps_the_headroom_and_pace() -> None:
    state = LineState(Band.CRITICAL, None)
    held = occupancy_line(LineInput(670_000, WINDOW, MAX_TOKENS, (2_000,) * 3), NEW, state)
    assert held.band is Band.CRITICAL
    assert "Under 10K tokens of headroom remain before it." in held.text
    assert "roughly 3 more steps" in held.text
    old = occupancy_line(LineInput(670_000, WINDOW, MAX_TOKENS, (2_000,) * 3), OLD, state)
    assert "headroom" not in old.text and "recent rate" not in old.text


# -- pace samples from a log ---------------------------------------------------------------


def _text(seq: int, kind: str, chars: int, **data: Any) -> dict[str, Any]:
    """A surface message costing ``chars / 4 + 8`` tokens (one text block)."""
    message = {"role": kind.split("/")[0], "content": [{"type": "text", "text": "x" * chars}]}
    if kind == "user/message":
        return {"type": kind, "seq": seq, "surfaceOp": "append", "data": message}
    return {"type": kind, "seq": seq, "surfaceOp": "append", "data": {**data, "message": message}}


def _answer(seq: int, turn: int, step: int, chars: int = 992) -> dict[str, Any]:
    event = _text(seq, "assistant/message", chars, turn=turn, step=step)
    event["data"]["usage"] = {"inputTokens": 10, "outputTokens": 1}
    return event


def _synthetic_log() -> list[dict[str, Any]]:
    # No request/header: measure() is then the surface's own price, 256 per message here.
    return [
        _text(0, "user/message", 992),
        {"type": "assistant/attempt", "seq": 1, "data": {"turn": 1, "step": 1, "stream": []}},
        _answer(2, 1, 1),
        _text(3, "tool/result", 992, turn=1, step=1),
        _answer(4, 1, 2),  # 768 − 256
        _answer(5, 1, 2),  # same step: not a new boundary
        _text(6, "user/message", 992),
        _answer(7, 2, 1),  # 1536 − 768
        _text(8, "tool/result", 1_992, turn=2, step=1),
        _answer(9, 2, 2),  # 2298 − 1536
        {
            "type": "compaction/summary",
            "seq": 10,
            "data": {"shadowedRange": {"start": 0, "end": 9}, "shadowedTokenCount": 2554},
        },
        {
            "type": "user/message",
            "seq": 11,
            "surfaceOp": {"op": "replace", "startSeq": 0, "endSeq": 9},
            "data": {"role": "user", "content": [{"type": "text", "text": "summary"}]},
        },
        _answer(12, 3, 1),  # re-based: the history is cleared
        _text(13, "user/message", 392),
        _answer(14, 3, 2),
    ]


def test_collector_takes_deltas_between_step_boundaries() -> None:
    events = _synthetic_log()
    assert pace_samples(map(typed, events[:10])) == (512, 768, 762)
    assert pace_samples(map(typed, events)) == (362,)


def test_collector_keeps_a_bounded_history() -> None:
    events: list[dict[str, Any]] = []
    for n in range(MAX_SAMPLES + 10):
        events += [_text(2 * n, "user/message", 8), _answer(2 * n + 1, n + 1, 1, chars=8)]
    assert len(pace_samples(map(typed, events))) == MAX_SAMPLES


LOGS = [path for home in all_homes() for path in session_log_paths(home)]


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name for p in LOGS])
def test_tracker_snapshot_carries_the_samples(log: Path) -> None:
    tracker = SessionTracker(LogFile(log, 4, compressed=True))
    tracker.refresh()
    snapshot = take_snapshot(tracker, home=log.parent, live=False, engine=EngineConfig())
    assert snapshot.pace_samples == pace_samples(map(typed, _events(log)))
    assert all(delta >= 0 for delta in snapshot.pace_samples)
    reading = line_input(snapshot)
    assert reading.used == snapshot.measured_tokens
    assert reading.pace_samples == snapshot.pace_samples
    result = occupancy_line(reading, NEW)
    assert result.text.startswith(("Context occupancy", "上下文实况"))


def test_some_real_session_has_enough_samples_for_an_estimate() -> None:
    if not LOGS:
        pytest.skip("no real logs")
    # the first log with three samples settles it (the rest are each checked above)
    assert any(len(pace_samples(map(typed, _events(log)))) >= 3 for log in LOGS)


def _events(log: Path) -> list[dict[str, Any]]:
    return log_records(log)


def test_collector_observes_before_the_fold() -> None:
    collector, meter = PaceCollector(), SessionMeter()
    for event in _synthetic_log()[:5]:
        collector.observe(typed(event), meter)
        meter.fold(typed(event))
    assert collector.last == (1, 2, 768)
    assert collector.samples == (512,)


@pytest.mark.parametrize(
    ("version", "wording"),
    [
        (None, Wording.README),
        ("0.1.3", Wording.SOURCE_0_1_3),
        ("0.1.2", Wording.SOURCE_0_1_3),
        ("0.1.4", Wording.README),
        ("0.2.0-beta.1", Wording.README),
        ("garbage", Wording.README),
    ],
)
def test_wording_follows_the_installed_version(version: str | None, wording: Wording) -> None:
    assert wording_for(version) is wording
