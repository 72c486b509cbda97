"""The settings a profile's visible patch layers give the plugins the fold mirrors: the
compaction engine's (``compaction-basic``), the tool-result pruner's cut
(``tool-result-pruner``), the adapter's model catalogue (``llm-deepseek``) and
``context-truth``'s band edges.

Read the way each plugin reads its config: ``compaction-basic`` and ``tool-result-pruner``
refuse a config that does not validate (DSH logs ``invalid config`` and runs without
that plugin: no compaction point, or no pruning) and ``context-truth`` takes its default
for each invalid value. The fold (:mod:`dshweb.core.fold`) reads these values and nothing
of the settings editor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dshweb.core.errors import DshError
from dshweb.core.profile.catalogue import DEFAULT_CATALOGUE, ModelCatalogue, model_catalogue
from dshweb.core.profile.layers import (
    engine_config,
    layered_config,
    preset_engine_configs,
    preset_pruner_configs,
    pruner_config,
)
from dshweb.core.profile.plugins import COMPACTION_BASIC_SCHEMA, CONTEXT_TRUTH_SCHEMA
from dshweb.core.profile.profile import profile_names
from dshweb.core.profile.pruner import DEFAULT_CUT, PruneCut, PrunerConfigError
from dshweb.core.profile.schema import default_int, default_number, refusals, validate
from dshweb.core.said import say


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
        problems = refusals(checked)
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


def band_rule(config: Mapping[str, object] | None) -> BandRule:
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
    """What DSH would refuse of the profile (the engine, the pruner, the catalogue), for
    every session's errors."""
    pruner: PruneCut | None = DEFAULT_CUT
    """The tool-result pruner's cut (an automatic fold prunes with it before it compacts);
    ``None``: the pruner does not run (disabled, absent from the preset, or its config
    refused: see ``error``)."""
    models: ModelCatalogue = DEFAULT_CATALOGUE
    """The adapter's model catalogue: the window and the default ``maxTokens`` of the
    model a request header names, before the log records them."""


def _engine(config: dict[str, Any] | None, where: str) -> tuple[EngineConfig | None, str | None]:
    try:
        return EngineConfig.from_config(config), None
    except EngineConfigError as problem:
        return None, f"compaction-basic does not start {where}: {problem}"


def _cut(config: dict[str, Any] | None, where: str) -> tuple[PruneCut | None, str | None]:
    """The pruner's cut from its row's config (``None``: it does not run)."""
    if config is None:
        return None, None
    try:
        return PruneCut.from_config(config), None
    except PrunerConfigError as problem:
        return None, f"tool-result-pruner does not start {where}: {problem}"


def _settings(
    engine_row: dict[str, Any] | None,
    pruner_row: dict[str, Any] | None,
    rule: BandRule,
    models: ModelCatalogue,
    where: str,
) -> EffectiveSettings:
    engine, refused = _engine(engine_row, where)
    pruner, cut_refused = _cut(pruner_row, where)
    errors = [e for e in (refused, cut_refused, models.error) if e is not None]
    return EffectiveSettings(engine, rule, "; ".join(errors) or None, pruner, models)


def effective_settings(
    home: Path, profile: str, extra_patches: Sequence[Path] = ()
) -> EffectiveSettings:
    """What the profile's visible layers (then ``extra_patches``) set, read now."""
    rule = DEFAULT_RULE
    try:
        truth = layered_config(home, profile, CONTEXT_TRUTH_SCHEMA.plugin_id, extra_patches)
        rule = band_rule(truth)
        models = model_catalogue(home, profile, extra_patches)
        pruner_row = pruner_config(home, profile, extra_patches)
        engine_row = engine_config(home, profile, extra_patches)
    except DshError as problem:
        said = say("profile-unloadable", profile=repr(profile), problem=problem)
        return EffectiveSettings(None, rule, said)
    return _settings(engine_row, pruner_row, rule, models, f"with profile {profile!r}")


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
    """The presets a visible layer patches, and the stock ones without a pruner, by name
    (the ``agentPreset`` of a log)."""
    others: EffectiveSettings
    """Any other preset: the engine and the pruner on their defaults."""

    def of(self, preset: str) -> EffectiveSettings:
        return self.named.get(preset, self.others)


def preset_settings(
    home: Path, profile: str = WEB_PROFILE, extra_patches: Sequence[Path] = ()
) -> PresetSettings | None:
    """The settings of each agent preset of a web-app ``profile``; ``None`` when the
    profile cannot be read or runs a top-level engine."""
    try:
        configs = preset_engine_configs(home, profile, extra_patches)
        pruners = preset_pruner_configs(home, profile, extra_patches) or {}
        rule = band_rule(
            layered_config(home, profile, CONTEXT_TRUTH_SCHEMA.plugin_id, extra_patches)
        )
        models = model_catalogue(home, profile, extra_patches)
    except DshError:
        return None
    if configs is None:
        return None
    named: dict[str, EffectiveSettings] = {}
    for name in sorted(set(configs) | set(pruners)):
        where = f"in agent preset {name!r} of profile {profile!r}"
        named[name] = _settings(configs.get(name), pruners.get(name, {}), rule, models, where)
    others = EffectiveSettings(EngineConfig(), rule, models.error, DEFAULT_CUT, models)
    return PresetSettings(profile, named, others)


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
