"""The words of the occupancy line: the sentence tables and how a line is assembled from them.

:func:`line_text` renders the line for a reading from its band, its :class:`Figures` and
the settings; :func:`unknown_text` the line before any reading. Every sentence is in
English and Chinese (``LineSettings.language``). ``SOURCE_0_1_3`` assembles the 0.1.3
source's line, ``README`` the later one; :mod:`.line` describes both, and its
:data:`~.line.UNVERIFIED` lists the pieces of ours in the latter.
"""

from __future__ import annotations

from dshweb.core.fold.gauge import Band
from dshweb.core.fold.line_tokens import format_line_tokens
from dshweb.core.fold.pace import PaceEstimate
from dshweb.core.settings.occupancy.figures import Figures, percent_of
from dshweb.core.settings.occupancy.line_settings import LineSettings, Wording

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


def unknown_text(settings: LineSettings) -> str:
    tail = _tail(Band.UNKNOWN, settings)
    if settings.language == "zh":
        return f"上下文实况：本会话尚未取到用量读数。不要据此声称上下文紧张。{tail}"
    return (
        "Context occupancy: no reading yet in this session. "
        f"Do not claim context is scarce on that basis.{tail}"
    )


def line_text(band: Band, f: Figures, settings: LineSettings) -> str:
    zh = settings.language == "zh"
    lang = settings.language
    readme = settings.wording is Wording.README
    floored = f.used_shown == 0 and f.used > 0
    if floored:
        used = ("不足 " if zh else "under ") + format_line_tokens(f.step)
        percent = ("不足 " if zh else "under ") + str(max(1, percent_of(f.step, f.window) or 1))
    else:
        used, percent = format_line_tokens(f.used_shown), str(f.percent)
    window = format_line_tokens(f.window)
    head0 = (
        f"上下文实况（宿主实测）：已用 {used} / {window}（{percent}%）。"
        if zh
        else f"Context occupancy (host-measured): {used} / {window} tokens used ({percent}%)."
    )
    point = ""
    if f.threshold is not None:
        share = percent_of(f.threshold, f.window)
        point = (
            f" 自动压缩阈值 {format_line_tokens(f.threshold)}（窗口的 {share}%）。"
            if zh
            else f" Automatic compaction fires at {format_line_tokens(f.threshold)} "
            f"({share}% of the window)."
        )
    remaining = ""
    if f.headroom is not None and f.headroom_shown is not None and f.headroom_step is not None:
        if f.headroom_shown == 0 and f.headroom > 0:
            step = format_line_tokens(f.headroom_step)
            remaining = (
                f" 距阈值不足 {step} tokens。"
                if zh
                else f" Under {step} tokens of headroom remain before it."
            )
        else:
            shown = format_line_tokens(f.headroom_shown)
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


def _free(f: Figures, zh: bool) -> str:
    if f.free_shown == 0 and f.free > 0:
        step = format_line_tokens(f.step)
        return (
            f" 窗口未用部分不足 {step}。" if zh else f" Under {step} of the window is still free."
        )
    shown = format_line_tokens(f.free_shown)
    return f" 窗口还有约 {shown} 未用。" if zh else f" About {shown} of the window is still free."
