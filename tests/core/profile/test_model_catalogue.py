"""The adapter's model catalogue as a profile gives it (dshweb.core.profile.catalogue), and
the compaction point it gives a session before its log records a window
(``catalogue_point``): checked against every fixture session the real runtime ran on its
profile's catalogue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dshweb.core.fold.compaction import catalogue_point, compaction_point
from dshweb.core.fold.index import HomeIndex
from dshweb.core.profile.catalogue import (
    DEFAULT_CATALOGUE,
    ModelCatalogue,
    catalogue_from_config,
    model_catalogue,
)
from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.effective import EngineConfig, effective_settings
from tests.conftest import FIXTURE_HOMES


def test_the_runtimes_default_catalogue() -> None:
    # dsh-llm-deepseek: DEFAULT_MODELS (1e6 windows, no maxTokens), DEFAULT_MAX_TOKENS 256e3
    for model in ("deepseek-flash", "deepseek-v4-pro", "not-listed"):
        limits = DEFAULT_CATALOGUE.of(model)
        assert (limits.context_window, limits.max_tokens) == (1_000_000, 256_000)
        assert (limits.context_window_from, limits.max_tokens_from) == ("default", "default")
    assert DEFAULT_CATALOGUE.of("deepseek-flash").as_json() == {
        "model": "deepseek-flash",
        "contextWindow": 1_000_000,
        "maxTokens": 256_000,
        "contextWindowFrom": "default",
        "maxTokensFrom": "default",
    }


def test_a_profile_patch_replaces_the_catalogue() -> None:
    # auto-compact's profile, as tests/fixtures/regenerate.py wrote it
    catalogue = model_catalogue(FIXTURE_HOMES / "auto-compact", "sdk")
    flash = catalogue.of("deepseek-flash")
    assert (flash.context_window, flash.max_tokens) == (24_000, 3_000)
    assert (flash.context_window_from, flash.max_tokens_from) == ("profile", "profile")
    # the patch's list replaced the default one: the pro model is no longer listed
    pro = catalogue.of("deepseek-v4-pro")
    assert (pro.context_window, pro.max_tokens) == (1_000_000, 256_000)
    assert (pro.context_window_from, pro.max_tokens_from) == ("default", "default")
    assert catalogue.error is None
    assert effective_settings(FIXTURE_HOMES / "auto-compact", "sdk").models == catalogue


def test_the_adapters_own_fallbacks_from_the_profile() -> None:
    catalogue = catalogue_from_config(
        {
            "defaultContextWindow": 128_000,
            "maxTokens": 8_000,
            "models": [{"id": "a", "contextWindow": 64_000}, {"id": "b", "maxTokens": 2_000}],
        }
    )
    a, b, c = catalogue.of("a"), catalogue.of("b"), catalogue.of("c")
    assert (a.context_window, a.max_tokens) == (64_000, 8_000)
    assert (b.context_window, b.max_tokens) == (128_000, 2_000)
    assert (c.context_window, c.max_tokens) == (128_000, 8_000)
    assert {a.context_window_from, b.max_tokens_from, c.context_window_from} == {"profile"}
    # without models, the default list stays, with its own 1e6 windows
    kept = catalogue_from_config({"maxTokens": 8_000}).of("deepseek-flash")
    assert (kept.context_window, kept.context_window_from) == (1_000_000, "default")
    assert (kept.max_tokens, kept.max_tokens_from) == (8_000, "profile")


REFUSED = [
    ({"models": [{"id": "x", "contextWindow": 0}]}, "catalog model 'x' contextWindow"),
    ({"models": [{"id": "x", "maxTokens": "big"}]}, "catalog model 'x' maxTokens must be a"),
    ({"models": [{"id": "x"}, {"id": "x"}]}, "duplicate catalog model 'x'"),
    ({"models": [{"contextWindow": 1000}]}, "catalog model ids must be non-empty texts"),
    ({"models": {"id": "x"}}, "models must be a list"),
    ({"maxTokens": 1.5}, "maxTokens must be a positive integer"),
    ({"defaultContextWindow": -1}, "defaultContextWindow must be a positive integer"),
    ({"maxTokens": JsExpr("1 + 1")}, "maxTokens is a !!js expression"),
]


@pytest.mark.parametrize(("config", "said"), REFUSED)
def test_a_catalogue_the_adapter_refuses_says_so_and_gives_the_defaults(
    config: dict[str, object], said: str
) -> None:
    catalogue = catalogue_from_config(config)
    assert catalogue.error is not None and said in catalogue.error
    assert catalogue.of("x") == DEFAULT_CATALOGUE.of("x")


def test_a_refused_catalogue_is_one_of_the_profiles_errors(tmp_path: Path) -> None:
    profile = tmp_path / "profiles" / "sdk"
    profile.mkdir(parents=True)
    (profile / "cordis.patch.yml").write_text(
        "- id: llm-deepseek\n  config:\n    models:\n      - {id: m, contextWindow: 0}\n"
    )
    settings = effective_settings(tmp_path, "sdk")
    assert settings.engine is not None and settings.models.of("m").context_window == 1_000_000
    assert settings.error == (
        "llm-deepseek does not start with profile 'sdk': catalog model 'm' contextWindow "
        "must be a positive integer"
    )


def test_the_catalogue_point() -> None:
    engine = EngineConfig(threshold_ratio=0.5, headroom_tokens=1_000, retain_ratio=0.1)
    small = catalogue_from_config({"models": [{"id": "m", "contextWindow": 24_000}]})
    # no maxTokens in the header: the model's default (the adapter's 256,000) is reserved,
    # which leaves no pressure budget in 24,000: no threshold (the engine skips)
    point = catalogue_point(engine, small, "m", None)
    assert point is not None and point.reserved_tokens == 256_000
    assert point.threshold_tokens is None
    # the header's own maxTokens wins: min(12,000, 24,000 - 3,000 - 1,000)
    point = catalogue_point(engine, small, "m", 3_000)
    assert point == compaction_point(context_window=24_000, reserved=3_000, engine=engine)
    assert (point.threshold_tokens, point.retain_tokens) == (12_000, 2_100)
    # DSH_FACTS §7's example: the engine's defaults on the default catalogue
    default = catalogue_point(EngineConfig(), ModelCatalogue(), "deepseek-flash", None)
    assert default is not None and default.threshold_tokens == 678_464
    assert catalogue_point(None, small, "m", None) is None
    assert catalogue_point(engine, small, None, None) is None


def _hidden() -> set[str]:
    manifest = json.loads((FIXTURE_HOMES / "MANIFEST.json").read_text("utf-8"))
    return {name for name, entry in manifest.items() if entry.get("hidden")}


def test_the_catalogue_point_is_the_point_the_log_records_for_every_fixture_session() -> None:
    # Every session the real runtime ran on its profile (not under an unrecorded
    # `dsh --patch`): the catalogue's window and the header's maxTokens give the point
    # its own request/context gives. Without the header's maxTokens it is the model's
    # default, which only sessions whose header set another one contradict.
    unrecorded = _hidden() | {"patched-point"}
    compared = explicit = 0
    for home in sorted(p for p in FIXTURE_HOMES.iterdir() if p.is_dir()):
        if home.name in unrecorded:
            continue
        index = HomeIndex(home)
        index.refresh()
        for folder, tracker in index.trackers.items():
            settings = index.settings_of(tracker)[1]
            shot = index.snapshot(folder)
            if shot.point is None:
                continue
            header = tracker.meter.reserved_tokens
            said = catalogue_point(settings.engine, settings.models, shot.model, header)
            assert said == shot.point, f"{home.name}/{folder.name}"
            compared += 1
            default = catalogue_point(settings.engine, settings.models, shot.model, None)
            explicit += default != shot.point
    assert compared >= 40
    assert explicit == 2  # model-switch and resumed-header ask for 8,000
