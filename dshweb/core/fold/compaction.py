"""Where ``compaction-basic`` folds a session, and ``measure()``'s total (DSH_FACTS §7).

The point is computed from the engine's config (its defaults, or a profile patch:
:mod:`dshweb.core.profile.effective`) and the session's own route: the window from
``request/context`` and the reserved completion from the request header's ``maxTokens``.
Before the log records a window, :func:`catalogue_point` takes both from the profile's
model catalogue for the model the header names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dshweb.core.fold.meter import SessionMeter
from dshweb.core.profile.catalogue import ModelCatalogue
from dshweb.core.profile.effective import EngineConfig


@dataclass(frozen=True, slots=True)
class CompactionPoint:
    context_window: int
    reserved_tokens: int
    threshold_tokens: int | None
    retain_tokens: int
    """``None`` threshold: the pressure budget is not positive, DSH skips auto-compaction."""

    def as_dict(self) -> dict[str, int | None]:
        return {
            "contextWindow": self.context_window,
            "reservedTokens": self.reserved_tokens,
            "thresholdTokens": self.threshold_tokens,
            "retainTokens": self.retain_tokens,
        }


def threshold_tokens(
    *, context_window: float, reserved: float, headroom: float, ratio: float
) -> int | None:
    """``floor(min(window × thresholdRatio, window − reserved − headroomTokens))``, or
    ``None`` when that pressure budget is not positive (DSH then skips auto-compaction).

    The one formula of the compaction point: the engine's (:func:`compaction_point`) and
    the one dsh-context-truth mirrors from its own settings (the occupancy line).
    """
    pressure_budget = context_window - reserved - headroom
    if pressure_budget <= 0:
        return None
    return math.floor(min(context_window * ratio, pressure_budget))


def compaction_point(
    *, context_window: int, reserved: int, engine: EngineConfig
) -> CompactionPoint:
    message_budget = context_window - reserved
    threshold = threshold_tokens(
        context_window=context_window,
        reserved=reserved,
        headroom=engine.headroom_tokens,
        ratio=engine.threshold_ratio,
    )
    retain = (
        engine.retain_tokens
        if engine.retain_tokens is not None
        else math.floor(message_budget * engine.retain_ratio)
    )
    return CompactionPoint(context_window, reserved, threshold, retain)


def catalogue_point(
    engine: EngineConfig | None,
    models: ModelCatalogue,
    model_id: str | None,
    header_max_tokens: int | None,
) -> CompactionPoint | None:
    """The point for the model a request header names, from the profile's catalogue: its
    window, and the completion the engine reserves, ``requestHeader.config.maxTokens``,
    else the model's default ``maxTokens`` (``reservedCompletionTokens`` of
    ``compaction-basic``). ``None``: no engine runs, or no header names a model yet (the
    engine then does not check at all: ``compactIfNeeded`` needs a routed header)."""
    if engine is None or not model_id:
        return None
    limits = models.of(model_id)
    reserved = limits.max_tokens if header_max_tokens is None else header_max_tokens
    return compaction_point(context_window=limits.context_window, reserved=reserved, engine=engine)


def measured_tokens(meter: SessionMeter) -> int:
    """``tokenMeter.measure(session).totalTokens``: what auto-compaction compares."""
    tools = meter.tools_tokens
    anchor = meter.anchor
    if anchor is None or meter.header is None or anchor.header != meter.header:
        return tools + meter.nodes_tokens
    estimate = tools + anchor.surface_before + anchor.price
    baseline = max(anchor.provider_total, estimate)
    return max(0, baseline + meter.nodes_tokens - (anchor.surface_before + anchor.price))
