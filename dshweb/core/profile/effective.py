"""The settings a profile's visible patch layers give the plugins the fold mirrors: the
compaction engine's (``compaction-basic``) and ``context-truth``'s band edges.

Read the way each plugin reads its config: ``compaction-basic`` refuses a config that
does not validate (DSH logs ``invalid config`` and runs without compaction, so there is no
compaction point) and ``context-truth`` takes its default for each invalid value. The
fold (:mod:`dshweb.core.fold`) reads these values and nothing of the settings editor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dshweb.core.errors import DshError
from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.layers import engine_config, layered_config
from dshweb.core.profile.plugins import COMPACTION_BASIC_SCHEMA, CONTEXT_TRUTH_SCHEMA
from dshweb.core.profile.schema import Schema, validate

# The plugins' defaults are their schemas' (core/profile/plugins.py), read through these
# and never retyped: the settings editor, the fold and the occupancy line then agree.


def default_number(schema: Schema, key: str) -> float:
    """The schema's default for a number key, as written there (an int stays an int)."""
    value = schema.get(key).default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{schema.plugin_id}.{key} has no number default: {value!r}")
    return value


def default_int(schema: Schema, key: str) -> int:
    value = schema.get(key).default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{schema.plugin_id}.{key} has no integer default: {value!r}")
    return value


def default_flag(schema: Schema, key: str) -> bool:
    value = schema.get(key).default
    if not isinstance(value, bool):
        raise TypeError(f"{schema.plugin_id}.{key} has no boolean default: {value!r}")
    return value


def default_text(schema: Schema, key: str) -> str:
    value = schema.get(key).default
    if not isinstance(value, str):
        raise TypeError(f"{schema.plugin_id}.{key} has no string default: {value!r}")
    return value


class EngineConfigError(DshError):
    """A ``compaction-basic`` config DSH refuses: the engine does not start at all."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """``compaction-basic``'s settings the compaction point needs; defaults: its schema's."""

    threshold_ratio: float = default_number(COMPACTION_BASIC_SCHEMA, "thresholdRatio")
    headroom_tokens: int = default_int(COMPACTION_BASIC_SCHEMA, "headroomTokens")
    retain_ratio: float = default_number(COMPACTION_BASIC_SCHEMA, "retainRatio")
    retain_tokens: int | None = None
    """Unset (the schema's ``null``): ``retainRatio`` applies."""

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> EngineConfig:
        """The engine's effective settings from a row's (whole, replacing) ``config``.

        Raises :class:`EngineConfigError` for a config the engine refuses (it then does
        not start: DSH logs ``invalid config`` and runs without compaction) or one set
        by a ``!!js`` expression, which dshweb does not evaluate.
        """
        checked = validate(COMPACTION_BASIC_SCHEMA, config or {})
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
class BandRule:
    """dsh-context-truth's band edges (fractions of the compaction point) and hysteresis:
    its ``moderateAt``, ``tightAt`` and ``hysteresis`` settings."""

    moderate_at: float = default_number(CONTEXT_TRUTH_SCHEMA, "moderateAt")
    tight_at: float = default_number(CONTEXT_TRUTH_SCHEMA, "tightAt")
    hysteresis: float = default_number(CONTEXT_TRUTH_SCHEMA, "hysteresis")


DEFAULT_RULE = BandRule()


def band_rule(config: dict[str, object] | None) -> BandRule:
    """The band edges a ``context-truth`` config sets (invalid values: the defaults)."""
    checked = validate(CONTEXT_TRUTH_SCHEMA, config or {}).config

    def number(key: str, default: float) -> float:
        value = checked.get(key)
        return (
            float(value)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else default
        )

    return BandRule(
        number("moderateAt", DEFAULT_RULE.moderate_at),
        number("tightAt", DEFAULT_RULE.tight_at),
        number("hysteresis", DEFAULT_RULE.hysteresis),
    )


@dataclass(frozen=True, slots=True)
class EffectiveSettings:
    engine: EngineConfig | None
    """``None`` when DSH would not run the engine (see ``error``): no compaction point."""
    rule: BandRule
    error: str | None
    """Why the profile gives no engine, for every session's errors."""


def effective_settings(
    home: Path, profile: str, extra_patches: Sequence[Path] = ()
) -> EffectiveSettings:
    """What the profile's visible layers (then ``extra_patches``) set, read now."""
    engine: EngineConfig | None = None
    rule, error = DEFAULT_RULE, None
    try:
        truth = layered_config(home, profile, CONTEXT_TRUTH_SCHEMA.plugin_id, extra_patches)
        rule = band_rule(truth)
        engine = EngineConfig.from_config(engine_config(home, profile, extra_patches))
    except EngineConfigError as problem:
        error = f"compaction-basic does not start with profile {profile!r}: {problem}"
    except DshError as problem:
        error = f"DSH cannot load profile {profile!r}: {problem}"
    return EffectiveSettings(engine, rule, error)
