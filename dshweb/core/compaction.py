"""Where ``compaction-basic`` folds a session, and ``measure()``'s total (DSH_FACTS §7).

The point is computed from the engine's config (its defaults, or a profile patch) and
the session's own route: the window from ``request/context`` and the reserved
completion from the request header's ``maxTokens``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dshweb.core.config_schema import validate
from dshweb.core.dshyaml import JsExpr
from dshweb.core.errors import DshError
from dshweb.core.meter import SessionMeter
from dshweb.core.truth_settings import COMPACTION_BASIC


class EngineConfigError(DshError):
    """A ``compaction-basic`` config DSH refuses: the engine does not start at all."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    threshold_ratio: float = 0.8
    headroom_tokens: int = 65536
    retain_ratio: float = 0.16
    retain_tokens: int | None = None

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> EngineConfig:
        """The engine's effective settings from a row's (whole, replacing) ``config``.

        Raises :class:`EngineConfigError` for a config the engine refuses (it then does
        not start: DSH logs ``invalid config`` and runs without compaction) or one set
        by a ``!!js`` expression, which dshweb does not evaluate.
        """
        checked = validate(COMPACTION_BASIC, config or {})
        problems = [f"{key} {message}" for key, message in checked.errors.items()]
        problems += [f"unknown key {key!r}" for key in checked.unknown]
        problems += [
            f"{key} is a !!js expression, which dshweb does not evaluate"
            for key, value in checked.config.items()
            if isinstance(value, JsExpr)
        ]
        if problems:
            raise EngineConfigError("; ".join(problems))
        merged: dict[str, Any] = checked.config  # every key: as given, else its default
        retain = merged["retainTokens"]
        return cls(
            threshold_ratio=float(merged["thresholdRatio"]),
            headroom_tokens=int(merged["headroomTokens"]),
            retain_ratio=float(merged["retainRatio"]),
            retain_tokens=int(retain) if retain is not None else None,
        )


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


def compaction_point(
    *, context_window: int, reserved: int, engine: EngineConfig
) -> CompactionPoint:
    message_budget = context_window - reserved
    pressure_budget = message_budget - engine.headroom_tokens
    threshold = (
        math.floor(min(context_window * engine.threshold_ratio, pressure_budget))
        if pressure_budget > 0
        else None
    )
    retain = (
        engine.retain_tokens
        if engine.retain_tokens is not None
        else math.floor(message_budget * engine.retain_ratio)
    )
    return CompactionPoint(context_window, reserved, threshold, retain)


def measured_tokens(meter: SessionMeter) -> int:
    """``tokenMeter.measure(session).totalTokens``: what auto-compaction compares."""
    tools = meter.tools_tokens
    anchor = meter.anchor
    if anchor is None or meter.header is None or anchor.header != meter.header:
        return tools + meter.nodes_tokens
    estimate = tools + anchor.surface_before + anchor.price
    baseline = max(anchor.provider_total, estimate)
    return max(0, baseline + meter.nodes_tokens - (anchor.surface_before + anchor.price))
