"""The compaction point, measure(), and where the engine's settings come from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dshweb.core.errors import DshError
from dshweb.core.fold.compaction import compaction_point, measured_tokens
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.effective import EngineConfig
from dshweb.core.profile.layers import engine_config, load_patch
from tests.conftest import FIXTURE_HOMES, REPO
from tests.support.logbuilder import typed
from tests.support.profile_homes import layered_home


def test_default_point_for_a_one_million_window() -> None:
    point = compaction_point(context_window=1_000_000, reserved=256_000, engine=EngineConfig())
    assert point.threshold_tokens == 678_464
    assert point.retain_tokens == int(744_000 * 0.16)


def test_ratio_wins_when_it_is_lower() -> None:
    engine = EngineConfig.from_config(
        {"thresholdRatio": 0.5, "headroomTokens": 1000, "retainRatio": 0.1}
    )
    point = compaction_point(context_window=24_000, reserved=3_000, engine=engine)
    assert (point.threshold_tokens, point.retain_tokens) == (12_000, 2_100)


def test_no_pressure_budget_means_no_threshold() -> None:
    point = compaction_point(context_window=24_000, reserved=3_000, engine=EngineConfig())
    assert point.threshold_tokens is None


def test_absolute_retain_tokens() -> None:
    engine = EngineConfig.from_config({"retainTokens": 5000})
    assert compaction_point(context_window=100_000, reserved=0, engine=engine).retain_tokens == 5000


def test_config_replaces_not_merges_but_defaults_fill() -> None:
    engine = EngineConfig.from_config({"thresholdRatio": 0.7})
    assert (engine.threshold_ratio, engine.headroom_tokens) == (0.7, 65536)


def _header(tools: str = "t") -> dict[str, object]:
    return {"config": {"model": "m", "maxTokens": 100}, "tools": [{"name": tools}]}


def _meter_with_anchor(provider_prompt: int) -> SessionMeter:
    meter = SessionMeter()
    meter.fold(typed({"type": "request/header", "seq": 0, "data": {"header": _header()}}))
    meter.fold(
        typed(
            {
                "type": "user/message",
                "seq": 1,
                "surfaceOp": "append",
                "data": {"role": "user", "content": [{"type": "text", "text": "a" * 400}]},
            }
        )
    )
    meter.fold(
        typed(
            {
                "type": "assistant/message",
                "seq": 2,
                "surfaceOp": "append",
                "data": {
                    "turn": 1,
                    "step": 1,
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "b" * 40}],
                    },
                    "usage": {"inputTokens": provider_prompt, "outputTokens": 10},
                },
            }
        )
    )
    return meter


def test_measure_uses_the_provider_total_when_it_is_larger() -> None:
    meter = _meter_with_anchor(provider_prompt=5000)
    assert measured_tokens(meter) == 5010
    meter.fold(
        typed(
            {
                "type": "tool/result",
                "seq": 3,
                "surfaceOp": "append",
                "data": {
                    "message": {"role": "tool", "content": [{"type": "text", "text": "c" * 40}]}
                },
            }
        )
    )
    assert measured_tokens(meter) == 5010 + (10 + 4 + 4)


def test_measure_falls_back_to_the_estimate() -> None:
    meter = _meter_with_anchor(provider_prompt=1)
    estimate = meter.tools_tokens + meter.nodes_tokens
    assert measured_tokens(meter) == estimate


def test_measure_without_anchor_after_header_change() -> None:
    meter = _meter_with_anchor(provider_prompt=5000)
    meter.fold(typed({"type": "request/header", "seq": 3, "data": {"header": _header("other")}}))
    assert measured_tokens(meter) == meter.tools_tokens + meter.nodes_tokens


def test_profile_and_home_layers(tmp_path: Path) -> None:
    home = layered_home(
        tmp_path,
        ["@deepseek-ai/dsh-base"],
        "- id: compaction-basic\n  config: {thresholdRatio: 0.7}\n",
        "- id: compaction-basic\n  config: {headroomTokens: 100}\n",
    )
    assert engine_config(home, "p") == {"headroomTokens": 100}
    extra = tmp_path / "extra.yml"
    extra.write_text("- insert:\n    - id: compaction-basic\n      config: {retainTokens: 9}\n")
    assert engine_config(home, "p", [extra]) == {"retainTokens": 9}


def test_web_app_profiles_run_the_preset_engines(tmp_path: Path) -> None:
    home = layered_home(
        tmp_path,
        ["@deepseek-ai/dsh-base", "@deepseek-ai/dsh-web-app"],
        "- id: compaction-basic\n  config: {thresholdRatio: 0.7}\n",
    )
    assert engine_config(home, "p") is None


def test_real_profiles(tmp_path: Path) -> None:
    # A fixture home's profiles as DSH made them (sdk on the SDK app, web on the web app),
    # the web one with a hand-written patch of a real machine (the shared corpus's).
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "manual-compact" / "profiles", home / "profiles")
    patch = REPO / "tests" / "fixtures" / "patches" / "web-cordis.patch.yml"
    shutil.copyfile(patch, home / "profiles" / "web" / "cordis.patch.yml")
    assert engine_config(home, "web") is None
    assert engine_config(home, "sdk") is None
    rows = load_patch(home / "profiles" / "web" / "cordis.patch.yml")
    assert rows[0] == {
        "id": "compaction-basic",
        "config": {
            "thresholdRatio": 0.7,
            "headroomTokens": 32768,
            "retainRatio": 0.2,
            "compactionRetries": 2,
        },
    }


def test_js_expressions_are_kept_as_text(tmp_path: Path) -> None:
    path = tmp_path / "p.yml"
    path.write_text("- id: hmr\n  disabled: !!js '!ctx.get(''profileContext'')'\n")
    assert load_patch(path) == [{"id": "hmr", "disabled": JsExpr("!ctx.get('profileContext')")}]


def test_broken_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "p.yml"
    path.write_text("- id: a\n  config: {x: [1, 2}\n")
    with pytest.raises(DshError, match=r"p\.yml: .* at line 2, column \d+"):
        load_patch(path)


def test_web_app_profiles_read_the_engine_from_the_preset_row(tmp_path: Path) -> None:
    preset = (
        "- id: preset-ptc\n  config:\n    plugins:\n      - id: compaction-basic\n"
        "        config: {thresholdRatio: 0.9}\n"
        "- id: preset-standard\n  config:\n    id: standard\n    plugins:\n"
        "      - id: compaction\n        name: cordis:group\n        group: true\n"
        "        config:\n          - id: command-compact\n"
        "          - id: compaction-basic\n            config: {thresholdRatio: 0.3}\n"
    )
    home = layered_home(tmp_path, ["@deepseek-ai/dsh-base", "@deepseek-ai/dsh-web-app"], preset)
    assert engine_config(home, "p") == {"thresholdRatio": 0.3}
