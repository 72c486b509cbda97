"""The tool-result pruner's cut as a profile gives it (dshweb.core.profile.pruner and
``EffectiveSettings.pruner``): from the same patch layers the settings page shows, inside
each agent preset on a web-app profile, refused as the runtime refuses it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dshweb.core.profile.effective import effective_settings, preset_settings
from dshweb.core.profile.pruner import DEFAULT_CUT, PruneCut, PrunerConfigError
from tests.conftest import FIXTURE_HOMES
from tests.support.profile_homes import layered_home

SDK = ["@deepseek-ai/dsh-base", "@deepseek-ai/dsh-sdk-app"]
WEB = ["@deepseek-ai/dsh-base", "@deepseek-ai/dsh-web-app"]


def _home(
    tmp_path: Path, patch: str, *, bundles: list[str] = SDK, home_patch: str | None = None
) -> Path:
    """A home whose profile ``p`` is built on ``bundles`` with ``patch`` as its layer."""
    return layered_home(tmp_path, bundles, patch, home_patch)


def _pruner(config: str) -> str:
    return f"- id: tool-result-pruner\n  config: {config}\n"


def test_the_defaults_are_the_runtimes() -> None:
    # ToolResultPruner's DEFAULTS (dsh-compaction-tool-result-pruner, lib/types/config.js)
    assert (DEFAULT_CUT.threshold, DEFAULT_CUT.head, DEFAULT_CUT.tail) == (8192, 4096, 1024)
    assert PruneCut.from_config(None) == PruneCut.from_config({}) == DEFAULT_CUT
    assert DEFAULT_CUT.as_json() == {"thresholdChars": 8192, "headChars": 4096, "tailChars": 1024}
    cut = PruneCut(6000, 2500, 700)
    assert PruneCut.from_config(cut.as_json()) == cut


def test_a_profile_that_says_nothing_runs_the_pruner_on_its_defaults(tmp_path: Path) -> None:
    settings = effective_settings(_home(tmp_path, "[]\n"), "p")
    assert settings.pruner == DEFAULT_CUT and settings.error is None


def test_a_lowered_threshold_is_the_cut(tmp_path: Path) -> None:
    home = _home(tmp_path, _pruner("{thresholdChars: 6000, headChars: 2500, tailChars: 700}"))
    settings = effective_settings(home, "p")
    assert settings.pruner == PruneCut(6000, 2500, 700)
    assert settings.error is None and settings.engine is not None


def test_the_row_config_replaces_the_whole_config_and_the_defaults_fill_it(
    tmp_path: Path,
) -> None:
    home = _home(
        tmp_path,
        _pruner("{thresholdChars: 6000, headChars: 2500}"),
        home_patch=_pruner("{thresholdChars: 20000}"),  # the later layer wins, whole
    )
    assert effective_settings(home, "p").pruner == PruneCut(20000, 4096, 1024)
    extra = tmp_path / "extra.yml"
    extra.write_text(_pruner("{tailChars: 10}"))
    assert effective_settings(home, "p", [extra]).pruner == PruneCut(8192, 4096, 10)


def test_a_disabled_pruner_is_none_and_a_later_layer_can_enable_it(tmp_path: Path) -> None:
    off = "- id: tool-result-pruner\n  disabled: true\n"
    home = _home(tmp_path, off + _pruner("{thresholdChars: 6000, headChars: 10, tailChars: 10}"))
    settings = effective_settings(home, "p")
    assert settings.pruner is None and settings.error is None
    (tmp_path / "cordis.patch.yml").write_text("- id: tool-result-pruner\n  disabled: false\n")
    assert effective_settings(home, "p").pruner == PruneCut(6000, 10, 10)


REFUSED = [
    ("{thresholdChars: 0}", "thresholdChars must be a whole number of at least 1"),
    ("{headChars: -1}", "headChars must be a whole number of at least 0"),
    ("{tailChars: 1.5}", "tailChars must be a whole number"),
    ("{thresholdChars: big}", "thresholdChars must be a number"),
    (
        "{headChars: 5000, tailChars: 4000}",
        "headChars + tailChars + the 39-character marker is 9039, more than thresholdChars "
        "(8192): a pruned result would not be smaller.",
    ),
    ("{thresholdChars: 100, headChars: 40, tailChars: 22}", "marker is 101, more than"),
    ("{thresholdChars: 9000, maxChars: 100}", "unknown key 'maxChars'"),
    (
        "{thresholdChars: !!js 'process.env.CUT'}",
        "thresholdChars is a !!js expression, which dshweb does not evaluate",
    ),
]


@pytest.mark.parametrize(("config", "said"), REFUSED)
def test_a_config_the_runtime_refuses_is_an_error_and_no_pruner(
    tmp_path: Path, config: str, said: str
) -> None:
    settings = effective_settings(_home(tmp_path, _pruner(config)), "p")
    assert settings.pruner is None
    assert settings.engine is not None  # the engine still runs: only the pruner refused
    assert settings.error is not None
    assert settings.error.startswith("tool-result-pruner does not start with profile 'p': ")
    assert said in settings.error


def test_from_config_raises_with_every_problem() -> None:
    with pytest.raises(PrunerConfigError) as refused:
        PruneCut.from_config({"thresholdChars": 0, "tailChars": -1, "x": 1})
    assert str(refused.value) == (
        "thresholdChars must be a whole number of at least 1; tailChars must be a whole "
        "number of at least 0; unknown key 'x'"
    )


def test_a_cut_that_exactly_fits_is_accepted(tmp_path: Path) -> None:
    # The runtime refuses headChars + 39 + tailChars > thresholdChars only: equal is fine.
    home = _home(tmp_path, _pruner("{thresholdChars: 100, headChars: 40, tailChars: 21}"))
    assert effective_settings(home, "p").pruner == PruneCut(100, 40, 21)


def test_every_refusal_is_named_in_one_error(tmp_path: Path) -> None:
    engine = "- id: compaction-basic\n  config: {thresholdRatio: 7}\n"
    home = _home(tmp_path, engine + _pruner("{thresholdChars: 0, headChars: x}"))
    settings = effective_settings(home, "p")
    assert settings.engine is None and settings.pruner is None
    assert settings.error == (
        "compaction-basic does not start with profile 'p': thresholdRatio must be above 0 "
        "and at most 1; tool-result-pruner does not start with profile 'p': thresholdChars "
        "must be a whole number of at least 1; headChars must be a number"
    )


def _preset(name: str, compaction: str) -> str:
    """A patch of the agent preset row ``preset-<name>`` whose ``compaction`` group holds
    ``compaction`` (rows, indented as entries of its config)."""
    return (
        f"- id: preset-{name}\n  config:\n    id: {name}\n    plugins:\n"
        "      - id: compaction\n        name: cordis:group\n        group: true\n"
        f"        config:\n{compaction}"
    )


ENGINE_ROW = "          - id: compaction-basic\n            config: {thresholdRatio: 0.5}\n"


def test_each_web_preset_prunes_with_its_own_cut(tmp_path: Path) -> None:
    standard = ENGINE_ROW + (
        "          - id: tool-result-pruner\n"
        "            config: {thresholdChars: 6000, headChars: 2500, tailChars: 700}\n"
    )
    cordis = ENGINE_ROW + "          - id: tool-result-pruner\n            disabled: true\n"
    ptc = ENGINE_ROW  # a preset's patch replaces its whole config: no pruner row, none runs
    patch = _preset("standard", standard) + _preset("cordis", cordis) + _preset("ptc", ptc)
    home = _home(tmp_path, patch, bundles=WEB)
    presets = preset_settings(home, "p")
    assert presets is not None
    assert presets.of("standard").pruner == PruneCut(6000, 2500, 700)
    assert presets.of("cordis").pruner is None
    assert presets.of("ptc").pruner is None
    # the stock minimal preset has no pruner; any other unpatched preset runs the defaults
    assert presets.of("minimal").pruner is None
    assert presets.of("mine").pruner == DEFAULT_CUT
    assert all(presets.of(p).error is None for p in ("standard", "cordis", "ptc", "minimal"))
    # the profile's own settings are its default preset's (what the settings page shows)
    assert effective_settings(home, "p").pruner == PruneCut(6000, 2500, 700)


def test_a_refused_preset_cut_names_the_preset(tmp_path: Path) -> None:
    rows = ENGINE_ROW + (
        "          - id: tool-result-pruner\n            config: {thresholdChars: 100}\n"
    )
    home = _home(tmp_path, _preset("standard", rows), bundles=WEB)
    presets = preset_settings(home, "p")
    assert presets is not None
    standard = presets.of("standard")
    assert standard.pruner is None and standard.engine is not None
    assert standard.error == (
        "tool-result-pruner does not start in agent preset 'standard' of profile 'p': "
        "headChars + tailChars + the 39-character marker is 5159, more than thresholdChars "
        "(100): a pruned result would not be smaller."
    )


def test_the_web_presets_fixture_as_the_runtime_ran_it(tmp_path: Path) -> None:
    # Its standard preset lists the pruner (on its defaults); its minimal one does not,
    # as the stock minimal preset does not (tests/fixtures/patches/web-dump-config.txt).
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "web-presets" / "profiles", home / "profiles")
    presets = preset_settings(home)
    assert presets is not None
    assert presets.of("standard").pruner == DEFAULT_CUT
    assert presets.of("minimal").pruner is None
    assert presets.of("standard").engine != presets.of("minimal").engine
