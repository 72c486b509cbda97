"""The line dsh-context-truth injects for a reading, rendered here byte for byte.

:func:`occupancy_line` is pure: a :class:`Reading` (``measure().totalTokens``, the window,
the routed request's ``maxTokens``, the pace samples), the plugin's settings and the
previous :class:`LineState` in; the text, its band, every figure behind it and the next
state out. No globals: the caller keeps the state per session, as the plugin does.

Two wordings (:class:`Wording`):

* ``SOURCE_0_1_3`` is ``lib/index.js`` of dsh-context-truth 0.1.3 (commit ``abdc1f8``),
  the newest source published: every string and number rule is taken from it. It has
  no pace, free-window or fold clause and ignores those settings.
* ``README`` (the default) is the later plugin its README describes, whose source is not
  published: the 0.1.3 line plus what the README quotes verbatim (the new authority
  clause, ``About … of the window is still free``, the two fold definitions, ``At this
  session's recent rate that is roughly … more steps``), a silent ``tight`` band by
  default, and a 10K headroom floor on a 1M window. Where the README quotes nothing (the
  Chinese of those clauses, the ``inform`` sentence, where each clause sits, "20+")
  the wording here is our own; :data:`UNVERIFIED` lists those pieces.

All arithmetic copies JavaScript: ``Math.round`` rounds halves up, ``toFixed(2)`` rounds
the exact binary value half up, and ratios are float divisions in the source's order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum

from dshweb.core.display import Band
from dshweb.core.pace import PaceEstimate, pace_estimate
from dshweb.core.session import SessionSnapshot


class Wording(StrEnum):
    README = "readme"
    SOURCE_0_1_3 = "0.1.3"


def wording_for(installed_version: str | None) -> Wording:
    """The wording of the plugin version a profile has installed: 0.1.3 and older speak
    the published source's line; newer (or unknown) ones the README's."""
    if installed_version is None:
        return Wording.README
    try:
        parts = tuple(int(p) for p in installed_version.split("-")[0].split(".")[:3])
    except ValueError:
        return Wording.README
    return Wording.SOURCE_0_1_3 if parts <= (0, 1, 3) else Wording.README


UNVERIFIED = (
    "zh authority clause (README wording)",
    "zh free-window clause",
    "zh fold definitions",
    "zh pace clause",
    "tightAdvice 'inform' sentence (en and zh)",
    "order of the free, pace and fold clauses within the line",
    "'1 more step' and '20+ more steps' forms",
    "headroom and pace shown in the critical band while it is held by hysteresis",
)
"""Parts of the ``README`` wording no published source or README quote pins down."""


@dataclass(frozen=True, slots=True)
class LineSettings:
    """The plugin settings that shape the line (key names in the comments)."""

    language: str = "en"
    show_point: bool = True  # showAutoCompactionPoint
    threshold_ratio: float = 0.8  # thresholdRatio
    headroom_tokens: float = 65536  # headroomTokens
    reserved_completion_tokens: float | None = None  # reservedCompletionTokens
    moderate_at: float = 0.5
    tight_at: float = 0.85
    hysteresis: float = 0.05
    quantum_percent: float = 5
    authoritative: bool = True
    stale_claim_clause: bool = True
    fold_clause: bool = True
    free_clause: bool = True
    tight_advice: str = "none"  # none | inform | stop
    pace_estimate: bool = True
    pace_samples: int = 16
    pace_min_samples: int = 3
    pace_margin: float = 0.25
    wording: Wording = Wording.README

    @classmethod
    def from_config(
        cls, config: Mapping[str, object], *, wording: Wording = Wording.README
    ) -> LineSettings:
        """From a ``context-truth`` config (``validate(...).config``); a missing or
        unusable value (a ``!!js`` expression) takes the default."""
        base = cls()

        def number(key: str, default: float) -> float:
            value = config.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float):
                return default
            return value

        def flag(key: str, default: bool) -> bool:
            value = config.get(key)
            return value if isinstance(value, bool) else default

        def whole(key: str, default: int) -> int:
            value = config.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else default

        reserved = config.get("reservedCompletionTokens")
        advice = config.get("tightAdvice")
        return cls(
            language="zh" if config.get("language") == "zh" else "en",
            show_point=flag("showAutoCompactionPoint", base.show_point),
            threshold_ratio=number("thresholdRatio", base.threshold_ratio),
            headroom_tokens=max(0, number("headroomTokens", base.headroom_tokens)),
            reserved_completion_tokens=(
                max(0, reserved)
                if isinstance(reserved, int | float) and not isinstance(reserved, bool)
                else None
            ),
            moderate_at=number("moderateAt", base.moderate_at),
            tight_at=number("tightAt", base.tight_at),
            hysteresis=max(0, number("hysteresis", base.hysteresis)),
            quantum_percent=max(0, number("quantumPercent", base.quantum_percent)),
            authoritative=flag("authoritative", base.authoritative),
            stale_claim_clause=flag("staleClaimClause", base.stale_claim_clause),
            fold_clause=flag("foldClause", base.fold_clause),
            free_clause=flag("freeClause", base.free_clause),
            tight_advice=advice if advice in ("none", "inform", "stop") else "none",
            pace_estimate=flag("paceEstimate", base.pace_estimate),
            pace_samples=whole("paceSamples", base.pace_samples),
            pace_min_samples=whole("paceMinSamples", base.pace_min_samples),
            pace_margin=number("paceMargin", base.pace_margin),
            wording=wording,
        )


@dataclass(frozen=True, slots=True)
class Reading:
    used: int | None
    """``tokenMeter.measure(session).totalTokens``."""
    window: int | None
    reserved: int = 0
    """The routed request's ``maxTokens`` (used when ``reservedCompletionTokens`` is null)."""
    pace_samples: tuple[int, ...] = ()
    """Per-step deltas since the last re-base, oldest first (:mod:`dshweb.core.pace`)."""


def reading_from_snapshot(snapshot: SessionSnapshot) -> Reading:
    """What the plugin would read for this session now."""
    point = snapshot.point
    return Reading(
        used=snapshot.measured_tokens,
        window=snapshot.context_pressure.get("contextWindow"),
        reserved=point.reserved_tokens if point is not None else 0,
        pace_samples=snapshot.pace_samples,
    )


@dataclass(frozen=True, slots=True)
class LineState:
    """What the plugin remembers per session between two renders."""

    band: Band | None = None
    rung: int | None = None


@dataclass(frozen=True, slots=True)
class BandEdges:
    """Where each band starts, in tokens (of the compaction point, or of the window
    when the line has no point)."""

    moderate: float
    tight: float
    critical: float


@dataclass(frozen=True, slots=True)
class OccupancyLine:
    text: str
    band: Band
    used: int | None
    window: int | None
    reserved: float
    threshold: int | None
    """The compaction point the line reports (from the plugin's own mirror settings)."""
    step: int
    """The display step the used figure is floored to."""
    used_shown: int | None
    percent_shown: int | None
    headroom: int | None
    """``max(0, threshold − used)``."""
    headroom_shown: int | None
    headroom_step: int | None
    free: int | None
    free_shown: int | None
    edges: BandEdges | None
    pace: PaceEstimate | None
    state: LineState
    """Pass it back in with the next reading of the same session."""


# -- JavaScript arithmetic -----------------------------------------------------------------


def js_round(value: float) -> int:
    """``Math.round``: the nearest integer, halves toward +∞."""
    floor = math.floor(value)
    return floor + 1 if value - floor >= 0.5 else floor


def format_tokens(value: float) -> str:
    """The plugin's figure: ``172437`` → ``172K``, ``1000000`` → ``1.00M``."""
    if not math.isfinite(value) or value < 0:
        return "?"
    if value >= 1e6:
        return f"{Decimal(value / 1e6).quantize(Decimal('0.01'), ROUND_HALF_UP)}M"
    if value >= 1e3:
        return f"{js_round(value / 1e3)}K"
    return str(js_round(value))


def percent_of(value: float, total: float) -> int | None:
    if total <= 0:
        return None
    return js_round(value / total * 100)


def display_step(window: int, quantum_percent: float) -> int:
    if quantum_percent > 0 and window > 0:
        return max(1000, js_round(quantum_percent / 100 * window))
    return 1


def headroom_step(headroom: int, window: int, settings: LineSettings) -> int:
    """The step the headroom is floored to: coarse far from the point, finer near it."""
    coarse = display_step(window, settings.quantum_percent)
    tiers: tuple[int, ...]
    if settings.wording is Wording.SOURCE_0_1_3:
        tiers = (
            coarse,
            max(1000, js_round(coarse * 0.4)),
            max(1000, js_round(coarse * 0.1)),
            2000,
        )
    else:
        # The README: "the floor is now … 10K on a 1M window"; that figure (not the
        # "10%" it also states) is what the live quotes and the 11-commit walk show.
        tiers = (coarse, max(1000, js_round(coarse * 0.4)), max(1000, js_round(coarse * 0.2)))
    for tier in tiers:
        if headroom >= 4 * tier:
            return tier
    return tiers[-1]


def _floor_to(value: int, step: int) -> int:
    return math.floor(value / step) * step


# -- bands ---------------------------------------------------------------------------------

_ORDER = (Band.AMPLE, Band.MODERATE, Band.TIGHT, Band.CRITICAL)


def raw_band(ratio: float, settings: LineSettings) -> Band:
    if ratio >= 1:
        return Band.CRITICAL
    if ratio >= settings.tight_at:
        return Band.TIGHT
    if ratio >= settings.moderate_at:
        return Band.MODERATE
    return Band.AMPLE


def settle_band(ratio: float, previous: Band | None, settings: LineSettings) -> Band:
    """Up at once; down only once ``ratio`` is ``hysteresis`` clear of the band's floor."""
    raw = raw_band(ratio, settings)
    if previous is None or previous not in _ORDER:
        return raw
    if _ORDER.index(raw) >= _ORDER.index(previous):
        return raw
    floor = {
        Band.MODERATE: settings.moderate_at,
        Band.TIGHT: settings.tight_at,
        Band.CRITICAL: 1.0,
    }.get(previous, 0.0)
    return raw if ratio <= floor - settings.hysteresis else previous


# -- the line ------------------------------------------------------------------------------


def occupancy_line(
    reading: Reading, settings: LineSettings, state: LineState | None = None
) -> OccupancyLine:
    state = state or LineState()
    used, window = reading.used, reading.window
    reserved: float = (
        settings.reserved_completion_tokens
        if settings.reserved_completion_tokens is not None
        else reading.reserved
    )
    threshold: int | None = None
    if settings.show_point and window is not None:
        budget = window - reserved - settings.headroom_tokens
        point = math.floor(min(window * settings.threshold_ratio, budget))
        if 0 < point < window:
            threshold = point
    known = used is not None and window is not None and window > 0
    step = display_step(window, settings.quantum_percent) if window is not None else 1

    if not known or used is None or window is None:
        return OccupancyLine(
            text=_render_unknown(settings),
            band=Band.UNKNOWN,
            used=used,
            window=window,
            reserved=reserved,
            threshold=threshold,
            step=step,
            used_shown=None,
            percent_shown=None,
            headroom=None,
            headroom_shown=None,
            headroom_step=None,
            free=None,
            free_shown=None,
            edges=None,
            pace=None,
            state=LineState(Band.UNKNOWN, None),
        )

    base = threshold if threshold is not None else window
    band = settle_band(used / base, state.band, settings)
    used_shown = _floor_to(used, step)
    headroom = max(0, threshold - used) if threshold is not None else None
    head_step = headroom_step(headroom, window, settings) if headroom is not None else None
    headroom_shown = (
        _floor_to(headroom, head_step) if headroom is not None and head_step is not None else None
    )
    free = max(0, window - used)
    pace = None
    if (
        settings.wording is Wording.README
        and settings.pace_estimate
        and headroom is not None
        and headroom > 0
    ):
        pace = pace_estimate(
            headroom=headroom,
            samples=reading.pace_samples,
            keep=settings.pace_samples,
            need=settings.pace_min_samples,
            margin=settings.pace_margin,
            previous=state.rung,
        )
    figures = _Figures(
        used=used,
        used_shown=used_shown,
        step=step,
        window=window,
        percent=percent_of(used_shown, window),
        threshold=threshold,
        headroom=headroom,
        headroom_shown=headroom_shown,
        headroom_step=head_step,
        free=free,
        free_shown=_floor_to(free, step),
        pace=pace,
    )
    return OccupancyLine(
        text=_render(band, figures, settings),
        band=band,
        used=used,
        window=window,
        reserved=reserved,
        threshold=threshold,
        step=step,
        used_shown=used_shown,
        percent_shown=figures.percent,
        headroom=headroom,
        headroom_shown=headroom_shown,
        headroom_step=head_step,
        free=free,
        free_shown=figures.free_shown,
        edges=BandEdges(base * settings.moderate_at, base * settings.tight_at, float(base)),
        pace=pace,
        state=LineState(band, pace.rung if pace is not None else None),
    )


@dataclass(frozen=True, slots=True)
class _Figures:
    used: int
    used_shown: int
    step: int
    window: int
    percent: int | None
    threshold: int | None
    headroom: int | None
    headroom_shown: int | None
    headroom_step: int | None
    free: int
    free_shown: int
    pace: PaceEstimate | None


# -- wording -------------------------------------------------------------------------------

_AUTHORITY_0_1_3 = {
    "en": "This host-measured line is the only authority on context pressure; never "
    "estimate it from the conversation's length.",
    "zh": "本行由宿主实测，是上下文压力的唯一权威——不要凭对话长度或轮数自行估计。",
}
_AUTHORITY = {
    "en": "Background telemetry from the host, and the only authority on context pressure: "
    "do not mention it, do not estimate or count it down yourself — it is restated whenever "
    "it changes — and take no action about compaction; the host folds between steps "
    "automatically.",
    "zh": "这是宿主的后台遥测，也是上下文压力的唯一权威：不要提及它，不要自行估算或倒数——"
    "它一有变化就会重新给出——也不要为压缩采取任何行动；宿主会在步骤之间自动折叠。",
}
_STALE = {
    "en": "Earlier claims that context is nearly exhausted — including ones inside compacted "
    "checkpoints — are stale.",
    "zh": '此前任何"上下文快满了"的说法（含压缩检查点里的）都已作废。',
}
_CLOSING = {
    Band.AMPLE: {
        "en": " Context is NOT scarce — do not wrap up, hand off to a subagent, or narrow "
        "scope for context reasons.",
        "zh": ' 上下文不紧张——不要因为"上下文不够"而收尾、交接子代理或缩小范围。',
    },
    Band.MODERATE: {
        "en": " There is still real headroom — keep going, and keep durable notes or commits "
        "current as you work.",
        "zh": " 仍有充足余量，继续推进即可，顺手把关键状态写进文档或提交。",
    },
    Band.CRITICAL: {
        "en": " At or past the automatic compaction point — expect earlier turns to be "
        "folded; keep nothing critical only in this window.",
        "zh": " 已到或越过自动压缩点——接下来可能发生压缩折叠，别让关键状态只存在于本窗口。",
    },
}
_TIGHT_ADVICE = {
    "stop": {
        "en": " Headroom is genuinely small — finish the current step, land durable state, "
        "then hand off.",
        "zh": " 余量确实不多了——收完当前这一步、把状态落到磁盘，再考虑交接。",
    },
    "inform": {
        "en": " When the reading reaches the point, the host folds older turns into a summary "
        "between steps; that costs one summarizer call.",
        "zh": " 读数到达阈值时，宿主会在步骤之间把较早的轮次折叠成摘要，代价是一次摘要调用。",
    },
}
_FOLD = {
    Band.TIGHT: {
        "en": " The fold is routine, not the end of the window: older turns become a summary "
        "and work continues after it.",
        "zh": " 折叠是例行操作，不是窗口的尽头：较早的轮次会变成摘要，之后工作照常继续。",
    },
    Band.CRITICAL: {
        "en": " The window is not exhausted — work continues after the fold.",
        "zh": " 窗口并未耗尽——折叠之后工作照常继续。",
    },
}


def _tail(band: Band, settings: LineSettings) -> str:
    lang = settings.language
    parts = []
    if settings.authoritative:
        table = _AUTHORITY_0_1_3 if settings.wording is Wording.SOURCE_0_1_3 else _AUTHORITY
        parts.append(table[lang])
    if band is Band.AMPLE and settings.stale_claim_clause:
        parts.append(_STALE[lang])
    return " " + " ".join(parts) if parts else ""


def _render_unknown(settings: LineSettings) -> str:
    tail = _tail(Band.UNKNOWN, settings)
    if settings.language == "zh":
        return f"上下文实况：本会话尚未取到用量读数。不要据此声称上下文紧张。{tail}"
    return (
        "Context occupancy: no reading yet in this session. "
        f"Do not claim context is scarce on that basis.{tail}"
    )


def _render(band: Band, f: _Figures, settings: LineSettings) -> str:
    zh = settings.language == "zh"
    lang = settings.language
    readme = settings.wording is Wording.README
    floored = f.used_shown == 0 and f.used > 0
    if floored:
        used = ("不足 " if zh else "under ") + format_tokens(f.step)
        percent = ("不足 " if zh else "under ") + str(max(1, percent_of(f.step, f.window) or 1))
    else:
        used, percent = format_tokens(f.used_shown), str(f.percent)
    window = format_tokens(f.window)
    head0 = (
        f"上下文实况（宿主实测）：已用 {used} / {window}（{percent}%）。"
        if zh
        else f"Context occupancy (host-measured): {used} / {window} tokens used ({percent}%)."
    )
    point = ""
    if f.threshold is not None:
        share = percent_of(f.threshold, f.window)
        point = (
            f" 自动压缩阈值 {format_tokens(f.threshold)}（窗口的 {share}%）。"
            if zh
            else f" Automatic compaction fires at {format_tokens(f.threshold)} "
            f"({share}% of the window)."
        )
    remaining = ""
    if f.headroom is not None and f.headroom_shown is not None and f.headroom_step is not None:
        if f.headroom_shown == 0 and f.headroom > 0:
            step = format_tokens(f.headroom_step)
            remaining = (
                f" 距阈值不足 {step} tokens。"
                if zh
                else f" Under {step} tokens of headroom remain before it."
            )
        else:
            shown = format_tokens(f.headroom_shown)
            remaining = (
                f" 距阈值还有约 {shown} tokens。"
                if zh
                else f" About {shown} tokens of headroom remain before it."
            )
    tail = _tail(band, settings)
    if not readme:
        if band is Band.CRITICAL:
            return f"{head0}{point}{_CLOSING[band][lang]}{tail}"
        words = _TIGHT_ADVICE["stop"] if band is Band.TIGHT else _CLOSING[band]
        return f"{head0}{point}{remaining}{words[lang]}{tail}"

    urgent = band in (Band.TIGHT, Band.CRITICAL)
    if band is Band.CRITICAL and not (f.headroom is not None and f.headroom > 0):
        remaining = ""
    pace = _pace(f.pace, zh) if urgent and remaining else ""
    free = _free(f, zh) if settings.free_clause else ""
    if band is Band.TIGHT:
        advice = _TIGHT_ADVICE.get(settings.tight_advice)
        closing = advice[lang] if advice is not None else ""
    else:
        closing = _CLOSING[band][lang]
    fold = _FOLD[band][lang] if urgent and settings.fold_clause else ""
    return f"{head0}{point}{remaining}{pace}{free}{closing}{fold}{tail}"


def _pace(pace: PaceEstimate | None, zh: bool) -> str:
    if pace is None:
        return ""
    if zh:
        return f" 按本会话近来的速度，约合 {pace.label} 步。"
    unit = "step" if pace.rung == 1 else "steps"
    return f" At this session's recent rate that is roughly {pace.label} more {unit}."


def _free(f: _Figures, zh: bool) -> str:
    if f.free_shown == 0 and f.free > 0:
        step = format_tokens(f.step)
        return (
            f" 窗口未用部分不足 {step}。" if zh else f" Under {step} of the window is still free."
        )
    shown = format_tokens(f.free_shown)
    return f" 窗口还有约 {shown} 未用。" if zh else f" About {shown} of the window is still free."


def render_lines(
    readings: Sequence[Reading], settings: LineSettings, state: LineState | None = None
) -> list[OccupancyLine]:
    """The lines for a run of readings of one session, each settled against the last."""
    lines: list[OccupancyLine] = []
    for reading in readings:
        line = occupancy_line(reading, settings, state)
        lines.append(line)
        state = line.state
    return lines
