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
from dshweb.core.profile.layers import (
    engine_config,
    layered_config,
    preset_engine_configs,
    preset_pruners,
    pruner_runs,
)
from dshweb.core.profile.plugins import COMPACTION_BASIC_SCHEMA, CONTEXT_TRUTH_SCHEMA
from dshweb.core.profile.profile import profile_names
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
    pruner: bool = True
    """Whether the tool-result pruner runs (an automatic fold prunes before it compacts)."""


def effective_settings(
    home: Path, profile: str, extra_patches: Sequence[Path] = ()
) -> EffectiveSettings:
    """What the profile's visible layers (then ``extra_patches``) set, read now."""
    engine: EngineConfig | None = None
    rule, error, pruner = DEFAULT_RULE, None, True
    try:
        truth = layered_config(home, profile, CONTEXT_TRUTH_SCHEMA.plugin_id, extra_patches)
        rule = band_rule(truth)
        pruner = pruner_runs(home, profile, extra_patches)
        engine = EngineConfig.from_config(engine_config(home, profile, extra_patches))
    except EngineConfigError as problem:
        error = f"compaction-basic does not start with profile {profile!r}: {problem}"
    except DshError as problem:
        error = f"DSH cannot load profile {profile!r}: {problem}"
    return EffectiveSettings(engine, rule, error, pruner)


@dataclass(frozen=True, slots=True)
class SettingsSource:
    """Which profile, and which agent preset of it, gave a session its compaction point."""

    profile: str
    preset: str | None = None

    def as_json(self) -> dict[str, str | None]:
        return {"profile": self.profile, "preset": self.preset}


WEB_PROFILE = "web"
"""The profile ``dsh web`` runs, whose engines live inside its agent presets."""


@dataclass(frozen=True, slots=True)
class PresetSettings:
    """The settings each agent preset of a web-app profile runs its engine with."""

    profile: str
    named: dict[str, EffectiveSettings]
    """The presets a visible layer patches, by name (the ``agentPreset`` of a log)."""
    others: EffectiveSettings
    """Any other preset: the engine on its defaults."""

    def of(self, preset: str) -> EffectiveSettings:
        return self.named.get(preset, self.others)


def preset_settings(
    home: Path, profile: str = WEB_PROFILE, extra_patches: Sequence[Path] = ()
) -> PresetSettings | None:
    """The settings of each agent preset of a web-app ``profile``; ``None`` when the
    profile cannot be read or runs a top-level engine."""
    try:
        configs = preset_engine_configs(home, profile, extra_patches)
        pruners = preset_pruners(home, profile, extra_patches) or {}
        rule = band_rule(
            layered_config(home, profile, CONTEXT_TRUTH_SCHEMA.plugin_id, extra_patches)
        )
    except DshError:
        return None
    if configs is None:
        return None
    named: dict[str, EffectiveSettings] = {}
    for name, config in configs.items():
        pruner = pruners.get(name, True)
        try:
            engine = EngineConfig.from_config(config)
            named[name] = EffectiveSettings(engine, rule, None, pruner)
        except EngineConfigError as problem:
            error = (
                f"compaction-basic does not start in agent preset {name!r} of profile "
                f"{profile!r}: {problem}"
            )
            named[name] = EffectiveSettings(None, rule, error, pruner)
    return PresetSettings(profile, named, EffectiveSettings(EngineConfig(), rule, None))


@dataclass(frozen=True, slots=True)
class SettingsTable:
    """Every session's compaction and band settings in one home, by the profile and agent
    preset it ran under: a session whose log names an agent preset (``agentPreset``)
    runs the web profile's preset; any other, ``profile`` (``DSHWEB_PROFILE``)."""

    profile: str
    own: EffectiveSettings
    presets: PresetSettings | None = None

    def of(self, preset: str | None) -> tuple[SettingsSource, EffectiveSettings]:
        if preset is not None and self.presets is not None:
            return SettingsSource(self.presets.profile, preset), self.presets.of(preset)
        return SettingsSource(self.profile), self.own


def settings_table(home: Path, profile: str, extra_patches: Sequence[Path] = ()) -> SettingsTable:
    """The table read now from the visible layers (then ``extra_patches``)."""
    presets = (
        preset_settings(home, WEB_PROFILE, extra_patches)
        if WEB_PROFILE in profile_names(home)
        else None
    )
    return SettingsTable(profile, effective_settings(home, profile, extra_patches), presets)
