"""What shapes the occupancy line besides the reading: the plugin's settings and its wording.

:class:`LineSettings` holds the ``context-truth`` settings the line depends on, built from a
validated config by :meth:`LineSettings.from_config` (an unusable value takes the default,
as the plugin does). :class:`Wording` names which plugin version's line is rendered (see
:mod:`dshweb.core.settings.occupancy.line`); :func:`wording_for` picks it from an installed version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from dshweb.core.profile.effective import DEFAULT_RULE, BandRule, band_rule
from dshweb.core.profile.plugins import CONTEXT_TRUTH_SCHEMA
from dshweb.core.profile.schema import default_flag, default_int, default_number, default_text

_TRUTH = CONTEXT_TRUTH_SCHEMA


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


@dataclass(frozen=True, slots=True)
class LineSettings:
    """The plugin settings that shape the line: the ``context-truth`` keys named in each
    default, whose values are its schema's (:data:`CONTEXT_TRUTH_SCHEMA`)."""

    language: str = default_text(_TRUTH, "language")
    show_point: bool = default_flag(_TRUTH, "showAutoCompactionPoint")
    threshold_ratio: float = default_number(_TRUTH, "thresholdRatio")
    headroom_tokens: float = default_number(_TRUTH, "headroomTokens")
    reserved_completion_tokens: float | None = None  # null: the request's own maxTokens
    rule: BandRule = DEFAULT_RULE
    """``moderateAt``, ``tightAt`` and ``hysteresis``, read by the fold's own reader
    (:func:`dshweb.core.profile.effective.band_rule`), for
    :func:`dshweb.core.fold.gauge.settle_band`."""
    quantum_percent: float = default_number(_TRUTH, "quantumPercent")
    authoritative: bool = default_flag(_TRUTH, "authoritative")
    stale_claim_clause: bool = default_flag(_TRUTH, "staleClaimClause")
    fold_clause: bool = default_flag(_TRUTH, "foldClause")
    free_clause: bool = default_flag(_TRUTH, "freeClause")
    tight_advice: str = default_text(_TRUTH, "tightAdvice")  # none | inform | stop
    pace_estimate: bool = default_flag(_TRUTH, "paceEstimate")
    pace_samples: int = default_int(_TRUTH, "paceSamples")
    pace_min_samples: int = default_int(_TRUTH, "paceMinSamples")
    pace_margin: float = default_number(_TRUTH, "paceMargin")
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

        def choice(key: str, default: str) -> str:
            value = config.get(key)
            return value if isinstance(value, str) and value in _TRUTH.get(key).choices else default

        reserved = config.get("reservedCompletionTokens")
        return cls(
            language=choice("language", base.language),
            show_point=flag("showAutoCompactionPoint", base.show_point),
            threshold_ratio=number("thresholdRatio", base.threshold_ratio),
            headroom_tokens=max(0, number("headroomTokens", base.headroom_tokens)),
            reserved_completion_tokens=(
                max(0, reserved)
                if isinstance(reserved, int | float) and not isinstance(reserved, bool)
                else None
            ),
            rule=band_rule(config),
            quantum_percent=max(0, number("quantumPercent", base.quantum_percent)),
            authoritative=flag("authoritative", base.authoritative),
            stale_claim_clause=flag("staleClaimClause", base.stale_claim_clause),
            fold_clause=flag("foldClause", base.fold_clause),
            free_clause=flag("freeClause", base.free_clause),
            tight_advice=choice("tightAdvice", base.tight_advice),
            pace_estimate=flag("paceEstimate", base.pace_estimate),
            pace_samples=whole("paceSamples", base.pace_samples),
            pace_min_samples=whole("paceMinSamples", base.pace_min_samples),
            pace_margin=number("paceMargin", base.pace_margin),
            wording=wording,
        )
