"""dshweb.core.settings.dshconfig: the composed profile as the real ``dsh`` prints it.

Tests without the marker read tests/fixtures/patches/web-dump-config.txt (a real
``dsh --profile web --dump-config`` of the corpus web profile). Tests marked ``dsh`` run
the real program (deepseek-harness-sdk) on a temporary DSH home; they are skipped only
when no ``dsh`` can be found.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dshweb.core.profile.catalogue import model_catalogue
from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.effective import effective_settings, preset_settings
from dshweb.core.profile.layers import STOCK_PRESETS_WITHOUT_PRUNER
from dshweb.core.profile.profile import Profile
from dshweb.core.profile.pruner import PruneCut
from dshweb.core.settings.dshconfig import (
    DshConfigError,
    SourceKind,
    active_engine_rows,
    config_defaults,
    context_truth_presence,
    dump_config,
    dump_config_schema,
    find_dsh,
    parse_dump,
    preset_engine_patch,
    validate_patch,
    value_sources,
)
from dshweb.core.settings.patchfile import (
    load_entry_list,
    read_patch,
    set_row_config,
    write_patch_atomically,
)
from tests.conftest import REPO

PATCHES = REPO / "tests" / "fixtures" / "patches"
WEB_DUMP = (PATCHES / "web-dump-config.txt").read_text(encoding="utf-8")
WEB_PATCH = (PATCHES / "web-cordis.patch.yml").read_text(encoding="utf-8")
CORPUS_PATCH = "/home/dev/.dsh-shared/profiles/web/cordis.patch.yml"
PRESETS = ("preset-standard", "preset-ptc", "preset-minimal", "preset-cordis")
ENGINE = {"thresholdRatio": 0.06, "headroomTokens": 1000, "retainTokens": 1000}


# --- the composed tree (no dsh needed) -------------------------------------------------


def test_rows_carry_the_layers_named_above_them() -> None:
    composed = parse_dump(WEB_DUMP)
    assert len(composed.rows) == 190
    top = composed.top("compaction-basic")
    assert top is not None
    assert top.layers == ("@deepseek-ai/dsh-base", "@deepseek-ai/dsh-web-app", CORPUS_PATCH)
    assert top.disabled is True and top.runs is False
    assert top.config == {
        "thresholdRatio": 0.7,
        "headroomTokens": 32768,
        "retainRatio": 0.2,
        "compactionRetries": 2,
    }
    title = composed.top("session-title-llm")
    assert title is not None and title.layers == ("@deepseek-ai/dsh-base", CORPUS_PATCH)
    registry = composed.top("agent-preset-registry")
    assert registry is not None and registry.layers == ("@deepseek-ai/dsh-web-app",)
    assert composed.default_preset == "standard"


def test_js_disabled_rows_may_run() -> None:
    composed = parse_dump(WEB_DUMP)
    manager = composed.top("plugin-manager")
    assert manager is not None
    assert manager.disabled == JsExpr("!ctx.get('profileContext')") and manager.runs is None
    timer = composed.top("timer")
    assert timer is not None and timer.disabled is False and timer.runs is True


def test_rows_inside_presets_are_children_and_not_addressable() -> None:
    composed = parse_dump(WEB_DUMP)
    preset = composed.top("preset-standard")
    assert preset is not None and preset.addressable
    group = next(c for c in preset.children if c.id == "compaction")
    assert group.group and [c.id for c in group.children] == [
        "compaction-basic",
        "command-compact",
        "tool-result-pruner",
    ]
    engine = group.children[0]
    assert engine.parents == ("preset-standard", "compaction")
    assert engine.preset == "preset-standard" and not engine.addressable
    assert engine.note == "nested in preset preset-standard, not addressable by an id patch"
    assert engine.layers == preset.layers
    workflow = next(
        c for c in preset.children if c.id == "delegation"
    ).children  # disabled=false rows
    assert all(row.runs is True for row in workflow)


def test_the_running_engines_of_the_web_profile_are_inside_the_presets() -> None:
    engines = active_engine_rows(parse_dump(WEB_DUMP))
    where = [(e.engine, e.preset, e.preset_name, e.default_preset) for e in engines]
    assert where == [
        ("compaction-basic", "preset-standard", "standard", True),
        ("tool-result-pruner", "preset-standard", "standard", True),
        ("compaction-basic", "preset-ptc", "ptc", False),
        ("tool-result-pruner", "preset-ptc", "ptc", False),
        ("compaction-basic", "preset-minimal", "minimal", False),
        ("compaction-basic", "preset-cordis", "cordis", False),
        ("tool-result-pruner", "preset-cordis", "cordis", False),
    ]
    # the corpus's id patch on compaction-basic reached only the disabled top-level row
    assert all(e.config == {} for e in engines if e.engine == "compaction-basic")
    pruner = {"thresholdChars": 8192, "headChars": 4096, "tailChars": 1024}
    assert all(e.config == pruner for e in engines if e.engine == "tool-result-pruner")
    assert not any(e.addressable or e.conditional for e in engines)


def test_the_stock_presets_without_a_pruner_are_the_ones_dshweb_reads_so() -> None:
    composed = parse_dump(WEB_DUMP)
    engines = active_engine_rows(composed)
    presets = {e.preset_name for e in engines if e.engine == "compaction-basic"}
    pruned = {e.preset_name for e in engines if e.engine == "tool-result-pruner"}
    assert presets - pruned == STOCK_PRESETS_WITHOUT_PRUNER == {"minimal"}
    # the adapter's row sets no config: its default catalogue
    llm = composed.top("llm-deepseek")
    assert llm is not None and not llm.config


def test_preset_engine_patch_copies_the_preset_and_changes_only_the_engine() -> None:
    composed = parse_dump(WEB_DUMP)
    preset = composed.top("preset-cordis")
    assert preset is not None
    before = copy.deepcopy(preset.config)
    row = preset_engine_patch(composed, "preset-cordis", "compaction-basic", ENGINE)
    assert row["id"] == "preset-cordis" and set(row) == {"id", "config"}
    expected = copy.deepcopy(before)
    group = next(p for p in expected["plugins"] if p["id"] == "compaction")
    group["config"][0]["config"] = ENGINE
    assert row["config"] == expected
    assert preset.config == before  # the composed tree is not touched
    skills = next(p for p in row["config"]["plugins"] if p["id"] == "skill-filesystem")
    assert isinstance(skills["config"]["customSkillDirs"][0], JsExpr)


def test_preset_engine_patch_round_trips_through_the_patch_file() -> None:
    composed = parse_dump(WEB_DUMP)
    row = preset_engine_patch(composed, "preset-standard", "tool-result-pruner", {"headChars": 1})
    text = set_row_config(WEB_PATCH, row["id"], row["config"])
    assert text.startswith(WEB_PATCH)
    rows, _ = load_entry_list(text)
    assert rows[-1] == row


def test_preset_engine_patch_refuses_what_it_cannot_do() -> None:
    composed = parse_dump(WEB_DUMP)
    with pytest.raises(DshConfigError, match="not an agent preset"):
        preset_engine_patch(composed, "compaction-basic", "compaction-basic", ENGINE)
    with pytest.raises(DshConfigError, match="has no rows"):
        preset_engine_patch(composed, "preset-minimal", "tool-result-pruner", ENGINE)


# --- schema validation (a schema shaped like dsh's) -------------------------------------

LOADER_EXPRESSION = {"$ref": "#/$defs/loaderExpression"}
SMALL_SCHEMA: dict[str, Any] = {
    "$defs": {
        "loaderExpression": {
            "type": "object",
            "properties": {"__jsExpr": {"type": "string"}},
            "required": ["__jsExpr"],
        },
        "config1": {
            "anyOf": [
                {
                    "type": ["object", "null"],
                    "properties": {
                        "thresholdChars": {
                            "anyOf": [
                                {"type": ["integer", "null"], "minimum": 0},
                                LOADER_EXPRESSION,
                            ]
                        },
                    },
                },
                LOADER_EXPRESSION,
            ]
        },
        "entry": {"type": "object", "required": ["name"]},
        "patch": {
            "type": "object",
            "properties": {
                "disabled": {"anyOf": [{"type": ["boolean", "null"]}, LOADER_EXPRESSION]},
                "insert": {"type": "array", "items": {"$ref": "#/$defs/entry"}},
            },
            "allOf": [
                {
                    "if": {"required": ["id"], "properties": {"id": {"const": "pruner"}}},
                    "then": {"properties": {"config": {"$ref": "#/$defs/config1"}}},
                }
            ],
        },
        "patchList": {"type": "array", "items": {"$ref": "#/$defs/patch"}},
    },
    "x-cordis": {
        "entries": [
            {"path": "/0", "id": "pruner", "name": "m/pruner", "configRef": "#/$defs/config1"}
        ]
    },
}


def test_validate_patch_messages_name_the_row_and_the_key() -> None:
    rows = [
        {"id": "pruner", "config": {"thresholdChars": "big"}},
        {"id": "pruner", "config": {"thresholdChars": JsExpr("1 + 1")}},
        {"id": "other", "disabled": "yes"},
        {"insert": [{"id": "context-truth"}]},
        {
            "id": "preset-x",
            "config": {
                "id": "x",
                "plugins": [{"id": "p", "name": "m/pruner", "config": {"thresholdChars": -1}}],
            },
        },
    ]
    assert validate_patch(rows, SMALL_SCHEMA) == [
        "row 1 (pruner): config.thresholdChars: 'big' is not of type 'integer', 'null'",
        "row 3 (other): disabled: 'yes' is not of type 'boolean', 'null'",
        "row 4, inserted row 1 (context-truth): 'name' is a required property",
        "row 5 (preset-x): config.plugins[p].config.thresholdChars: "
        "-1 is less than the minimum of 0",
    ]
    assert validate_patch(rows[1:2], SMALL_SCHEMA) == []


def test_config_defaults_come_from_the_schema_then_known_defaults() -> None:
    assert config_defaults(None, "@deepseek-ai/dsh-compaction-basic")["headroomTokens"] == 65536
    assert config_defaults(None, "dsh-context-truth")["foldAtIdle"] is False
    assert config_defaults(None, "unknown") == {}
    schema = copy.deepcopy(SMALL_SCHEMA)
    schema["$defs"]["config1"]["anyOf"][0]["properties"]["thresholdChars"]["default"] = 8192
    assert config_defaults(schema, "m/pruner") == {"thresholdChars": 8192}


# --- context-truth presence and value sources (files only) ------------------------------


def make_profile(
    home: Path, *, bundles: list[str], dependencies: dict[str, str] | None = None
) -> Path:
    folder = home / "profiles" / "web"
    folder.mkdir(parents=True)
    package = {
        "name": "dsh-profile-web",
        "private": True,
        "dependencies": dependencies or {},
        "dsh": {"profile": {"bundles": bundles}},
    }
    (folder / "package.json").write_text(json.dumps(package))
    return folder


def test_context_truth_absent_says_how_to_add_it(tmp_path: Path) -> None:
    make_profile(tmp_path, bundles=["@deepseek-ai/dsh-base"])
    presence = context_truth_presence(Profile.read(tmp_path, "web"), parse_dump(WEB_DUMP))
    assert not presence.present and presence.needs_insert and not presence.installed
    assert presence.sources == () and presence.howto is not None
    assert "dsh plugin --profile web add dsh-context-truth" in presence.howto
    assert "- insert:\n    - id: context-truth\n      name: dsh-context-truth" in presence.howto


def test_context_truth_found_in_package_json_and_patches(tmp_path: Path) -> None:
    folder = make_profile(
        tmp_path,
        bundles=["@deepseek-ai/dsh-base", "dsh-context-truth"],
        dependencies={"dsh-context-truth": "1"},
    )
    (folder / "node_modules" / "dsh-context-truth").mkdir(parents=True)
    (folder / "node_modules" / "dsh-context-truth" / "package.json").write_text("{}")
    (tmp_path / "cordis.patch.yml").write_text(
        "- insert:\n    - id: ct\n      name: dsh-context-truth\n"
    )
    presence = context_truth_presence(Profile.read(tmp_path, "web"), None)
    assert presence.present and presence.installed and presence.howto is None
    assert presence.sources == (
        "package.json dependencies",
        "installed in node_modules",
        "package.json dsh.profile.bundles",
        f"insert row in the home patch ({tmp_path / 'cordis.patch.yml'})",
    )
    composed = parse_dump(
        WEB_DUMP + "# == dsh-context-truth\n- id: context-truth\n  name: dsh-context-truth\n"
    )
    presence = context_truth_presence(Profile.read(tmp_path, "web"), composed)
    assert presence.row_ids == ("context-truth",) and not presence.needs_insert


def test_a_dependency_alone_assembles_nothing(tmp_path: Path) -> None:
    make_profile(
        tmp_path, bundles=["@deepseek-ai/dsh-base"], dependencies={"dsh-context-truth": "1"}
    )
    presence = context_truth_presence(Profile.read(tmp_path, "web"), None)
    assert not presence.present and presence.sources == ("package.json dependencies",)


def test_value_sources_of_the_corpus_web_profile(tmp_path: Path) -> None:
    folder = make_profile(tmp_path, bundles=["@deepseek-ai/dsh-base", "@deepseek-ai/dsh-web-app"])
    (folder / "cordis.patch.yml").write_text(WEB_PATCH)
    composed = parse_dump(WEB_DUMP.replace("/home/dev/.dsh-shared", str(tmp_path)))
    top = composed.top("compaction-basic")
    assert top is not None
    sources = value_sources(composed, top, profile=Profile.read(tmp_path, "web"))
    profile_patch = (str(folder / "cordis.patch.yml"),)
    assert {k: (s.kind, s.layers, s.value) for k, s in sources.items()} == {
        "thresholdRatio": (SourceKind.PROFILE, profile_patch, 0.7),
        "headroomTokens": (SourceKind.PROFILE, profile_patch, 32768),
        "retainRatio": (SourceKind.PROFILE, profile_patch, 0.2),
        "compactionRetries": (SourceKind.PROFILE, profile_patch, 2),
        "maxOverflowRetries": (SourceKind.DEFAULT, (), 1),
        "auto": (SourceKind.DEFAULT, (), True),
        "modelPolicies": (SourceKind.DEFAULT, (), []),
    }
    title = composed.top("session-title-llm")
    assert title is not None
    assert value_sources(composed, title, profile=Profile.read(tmp_path, "web"))[
        "targetWords"
    ].describe() == ("bundle @deepseek-ai/dsh-base")
    running = active_engine_rows(composed)[1]  # preset-standard's pruner
    sources = value_sources(composed, running.row, profile=Profile.read(tmp_path, "web"))
    assert sources["headChars"].kind is SourceKind.BUNDLE
    assert sources["headChars"].layers == ("@deepseek-ai/dsh-web-app",)


# --- running dsh (fake ones) ------------------------------------------------------------


def fake_dsh(tmp_path: Path, script: str) -> Path:
    path = tmp_path / "bin" / "dsh"
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_dsh_prefers_path_then_the_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path = fake_dsh(tmp_path, "exit 0\n")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert find_dsh() == on_path
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    assert find_dsh() is None
    shutil.copy(on_path, venv / "dsh")
    assert find_dsh() == venv / "dsh"


def test_a_failing_dsh_is_reported_with_what_it_said(tmp_path: Path) -> None:
    dsh = fake_dsh(
        tmp_path,
        'echo "Error: dsh: failed to parse overlay: YAMLException: bad indentation (4:4)" >&2\n'
        'echo "    at parsePatchList (file:///snapshot/x.js:1:1)" >&2\nexit 1\n',
    )
    (tmp_path / "profiles" / "web").mkdir(parents=True)
    with pytest.raises(DshConfigError) as caught:
        dump_config(tmp_path, "web", dsh=dsh)
    message = str(caught.value)
    assert "exit 1" in message and "bad indentation (4:4)" in message
    assert "parsePatchList" not in message


def test_a_hanging_dsh_times_out(tmp_path: Path) -> None:
    dsh = fake_dsh(tmp_path, "exec sleep 30\n")
    (tmp_path / "profiles" / "web").mkdir(parents=True)
    with pytest.raises(DshConfigError, match=r"did not finish within 0\.5 s"):
        dump_config(tmp_path, "web", dsh=dsh, timeout=0.5)


def test_a_missing_profile_is_not_created_unasked(tmp_path: Path) -> None:
    dsh = fake_dsh(tmp_path, "echo run >> \"$DSH_HOME/ran\"\necho '[]'\n")
    with pytest.raises(DshConfigError, match="does not exist"):
        dump_config(tmp_path, "web", dsh=dsh)
    assert not (tmp_path / "ran").exists()
    composed = dump_config(tmp_path, "web", dsh=dsh, create=True)
    assert composed.rows == () and (tmp_path / "ran").exists()


def test_dsh_runs_with_the_home_and_telemetry_off(tmp_path: Path) -> None:
    dsh = fake_dsh(
        tmp_path, 'echo "- id: $DSH_TELEMETRY_MODE\n  name: $DSH_HOME"\necho warned >&2\n'
    )
    (tmp_path / "profiles" / "web").mkdir(parents=True)
    composed = dump_config(tmp_path, "web", dsh=dsh)
    assert [(r.id, r.name) for r in composed.rows] == [("DISABLED", str(tmp_path))]
    assert composed.warnings == ("warned",)


def test_dsh_is_not_run_on_a_file_it_would_wait_for(tmp_path: Path) -> None:
    """dsh reads a FIFO at a patch layer and waits for ever (then times out after a
    minute): the file is named at once and dsh never started; the profile's other files
    reach dsh's scratch home only when they are regular files, copied within bounds."""
    seen = tmp_path / "seen"
    dsh = fake_dsh(tmp_path, f'ls "$DSH_HOME/profiles/web" > {seen}\necho "[]"\n')
    profile = tmp_path / "profiles" / "web"
    profile.mkdir(parents=True)
    os.mkfifo(tmp_path / "cordis.patch.yml")
    with pytest.raises(DshConfigError) as refused:
        dump_config(tmp_path, "web", dsh=dsh, timeout=30)
    assert str(refused.value) == (
        f"dsh was not run: {tmp_path}/cordis.patch.yml is a FIFO (named pipe), not a regular "
        "file: dshweb does not read it"
    )
    assert not seen.exists()
    (tmp_path / "cordis.patch.yml").unlink()
    os.mkfifo(profile / "stray")
    (profile / "linked.yml").symlink_to("/etc/passwd")
    (profile / "package.json").write_text("{}")
    dump_config(tmp_path, "web", dsh=dsh, timeout=30)
    assert seen.read_text().split() == ["package.json"]  # the FIFO and the link left out


# --- the real dsh -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def dsh() -> Path:
    found = find_dsh()
    if found is None:
        pytest.skip(
            "no `dsh` on PATH or beside this Python: pip install deepseek-harness-sdk==0.2.1rc2"
        )
    return found


@pytest.fixture
def home(tmp_path: Path, dsh: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def patch_path(home: Path, profile: str) -> Path:
    return Profile.read(home, profile).patch_path


def save(path: Path, row_id: str, config: dict[str, Any], insert_name: str | None = None) -> None:
    doc = read_patch(path)
    text = set_row_config(doc.text, row_id, config, insert_name=insert_name)
    write_patch_atomically(path, text, expected_sha256=doc.sha256)


@pytest.mark.dsh
def test_saved_sdk_settings_compose_on_the_running_rows(home: Path, dsh: Path) -> None:
    before = dump_config(home, "sdk", dsh=dsh, create=True)
    presence = context_truth_presence(Profile.read(home, "sdk"), before)
    assert presence.needs_insert
    path = patch_path(home, "sdk")
    truth = {"language": "zh", "foldAtIdle": True, "compactionRules": ["Keep task state."]}
    save(path, "context-truth", truth, insert_name="dsh-context-truth")
    engine = {"thresholdRatio": 0.6, "headroomTokens": 4096, "retainRatio": 0.2}
    save(path, "compaction-basic", engine)

    after = dump_config(home, "sdk", dsh=dsh)
    assert after.warnings == ()
    top = after.top("compaction-basic")
    assert top is not None and top.runs is True and top.config == engine
    assert top.layers[-1] == str(path)
    added = after.top("context-truth")
    assert added is not None and added.runs is True
    assert (added.name, added.config, added.layers) == ("dsh-context-truth", truth, (str(path),))
    engines = {e.engine: e for e in active_engine_rows(after)}
    assert (
        engines["compaction-basic"].preset is None and engines["compaction-basic"].config == engine
    )
    assert engines["tool-result-pruner"].addressable
    presence = context_truth_presence(Profile.read(home, "sdk"), after)
    assert presence.present and presence.row_ids == ("context-truth",)
    sources = value_sources(after, added, profile=Profile.read(home, "sdk"))
    assert sources["language"].kind is SourceKind.PROFILE
    assert sources["order"].kind is SourceKind.DEFAULT and sources["order"].value == 100

    schema = dump_config_schema(home, "sdk", dsh=dsh)
    assert validate_patch(read_patch(path).rows, schema) == []
    assert validate_patch(
        [{"id": "compaction-basic", "config": {"headroomTokens": -1}}], schema
    ) == ["row 1 (compaction-basic): config.headroomTokens: -1 is less than the minimum of 0"]


@pytest.mark.dsh
def test_the_pruner_and_the_catalogue_read_as_dsh_composes_them(home: Path, dsh: Path) -> None:
    dump_config(home, "sdk", dsh=dsh, create=True)
    path = patch_path(home, "sdk")
    cut = PruneCut(6000, 2500, 700)
    save(path, "tool-result-pruner", cut.as_json())
    models = {"models": [{"id": "deepseek-flash", "contextWindow": 24000, "maxTokens": 3000}]}
    save(path, "llm-deepseek", models)
    composed = dump_config(home, "sdk", dsh=dsh)
    pruner, llm = composed.top("tool-result-pruner"), composed.top("llm-deepseek")
    assert pruner is not None and pruner.runs is True and pruner.config == cut.as_json()
    assert effective_settings(home, "sdk").pruner == cut
    assert llm is not None and llm.config == models
    flash = model_catalogue(home, "sdk").of("deepseek-flash")
    assert (flash.context_window, flash.max_tokens) == (24000, 3000)

    # web: the cut saved into the standard preset is the one that preset runs with
    web = dump_config(home, "web", dsh=dsh, create=True)
    row = preset_engine_patch(web, "preset-standard", "tool-result-pruner", cut.as_json())
    save(patch_path(home, "web"), row["id"], row["config"])
    after = dump_config(home, "web", dsh=dsh)
    running = {
        e.preset_name: e.config
        for e in active_engine_rows(after)
        if e.engine == "tool-result-pruner"
    }
    presets = preset_settings(home)
    assert presets is not None and running["standard"] == cut.as_json()
    assert presets.of("standard").pruner == cut
    for name in ("ptc", "cordis", "minimal"):
        shown = presets.of(name).pruner
        assert (shown.as_json() if shown is not None else None) == running.get(name)


@pytest.mark.dsh
def test_a_broken_patch_is_reported_with_dsh_s_words(home: Path, dsh: Path) -> None:
    dump_config(home, "sdk", dsh=dsh, create=True)
    patch_path(home, "sdk").write_text("- id: x\n  config:\n    a: 1\n   b: 2\n")
    with pytest.raises(DshConfigError, match=r"bad indentation of a mapping entry \(4:4\)"):
        dump_config(home, "sdk", dsh=dsh)


@pytest.mark.dsh
def test_an_unknown_id_is_skipped_with_a_warning(home: Path, dsh: Path) -> None:
    dump_config(home, "sdk", dsh=dsh, create=True)
    save(patch_path(home, "sdk"), "no-such-row", {"a": 1})
    composed = dump_config(home, "sdk", dsh=dsh)
    assert any('entry "no-such-row" not found' in w for w in composed.warnings)


def turns_at_least(count: int) -> Callable[[Any], bool]:
    return lambda log: int(log.count("turn/end")) >= count


def web_home(home: Path, dsh: Path) -> Path:
    """The corpus web profile (its hand-written patch) in ``home``."""
    dump_config(home, "web", dsh=dsh, create=True)
    path = patch_path(home, "web")
    path.write_text(WEB_PATCH)
    return path


@pytest.mark.dsh
def test_an_id_patch_does_not_reach_the_web_engines(home: Path, dsh: Path) -> None:
    web_home(home, dsh)
    composed = dump_config(home, "web", dsh=dsh)
    top = composed.top("compaction-basic")
    assert top is not None and top.runs is False and top.config["thresholdRatio"] == 0.7
    engines = active_engine_rows(composed)
    assert {e.preset for e in engines} == set(PRESETS)
    assert all(e.config == {} for e in engines if e.engine == "compaction-basic")


@pytest.mark.dsh
def test_a_preset_patch_reaches_the_nested_engine_and_nothing_else(home: Path, dsh: Path) -> None:
    path = web_home(home, dsh)
    before = dump_config(home, "web", dsh=dsh)
    row = preset_engine_patch(before, "preset-standard", "compaction-basic", ENGINE)
    save(path, row["id"], row["config"])

    after = dump_config(home, "web", dsh=dsh)
    assert after.warnings == ()
    engines = {(e.preset, e.engine): e for e in active_engine_rows(after)}
    assert engines[("preset-standard", "compaction-basic")].config == ENGINE
    assert engines[("preset-ptc", "compaction-basic")].config == {}
    preset = after.top("preset-standard")
    assert preset is not None and preset.layers[-1] == str(path)
    assert preset.config == row["config"]
    assert [
        (r.id, r.name, r.config, r.disabled) for r in after.rows if r.id != "preset-standard"
    ] == [(r.id, r.name, r.config, r.disabled) for r in before.rows if r.id != "preset-standard"]
    nested = engines[("preset-standard", "compaction-basic")].row
    sources = value_sources(after, nested, profile=Profile.read(home, "web"))
    assert sources["thresholdRatio"].kind is SourceKind.PROFILE
    assert sources["compactionRetries"].kind is SourceKind.DEFAULT

    schema = dump_config_schema(home, "web", dsh=dsh)
    assert validate_patch(read_patch(path).rows, schema) == []
    bad = preset_engine_patch(after, "preset-standard", "compaction-basic", {"headroomTokens": "x"})
    assert validate_patch([bad], schema) == [
        "row 1 (preset-standard): config.plugins[compaction].config[compaction-basic]"
        ".config.headroomTokens: 'x' is not of type 'integer', 'null'"
    ]


@pytest.mark.dsh
@pytest.mark.parametrize("mechanism", ["preset", "id"])
def test_only_the_preset_patch_makes_a_web_session_compact(
    home: Path, dsh: Path, tmp_path: Path, mechanism: str
) -> None:
    """The running engine, not just the tree: a web session under a small threshold.

    With the engine's defaults a 200,000-token window with 8,000 reserved compacts at
    126,464 tokens; the patched preset engine at 12,000 (0.06 of the window), which
    this session passes in its second turn.
    """
    from tests.fixtures.dshrun import WebProfile, session_logs, wait_for_log
    from tests.fixtures.fakemodel import FakeModel

    path = web_home(home, dsh)
    model = {"models": [{"id": "deepseek-flash", "contextWindow": 200000, "maxTokens": 8000}]}
    save(path, "llm-deepseek", model)
    if mechanism == "preset":
        composed = dump_config(home, "web", dsh=dsh)
        row = preset_engine_patch(composed, "preset-standard", "compaction-basic", ENGINE)
        save(path, row["id"], row["config"])
    else:
        save(path, "compaction-basic", ENGINE)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeModel() as fake, WebProfile(home=home, cwd=workspace, base_url=fake.base_url) as web:
        request = {"cwd": str(workspace), "sessionId": "s-1"}
        created = web.rpc("session/create", {"request": request})
        assert created == {"sessionId": "s-1", "agentPreset": "standard"}
        for turn in (1, 2, 3):
            web.prompt("s-1", "!bash seq 1 1500")
            wait_for_log(home, "s-1", turns_at_least(turn), what=f"turn {turn}")
        assert fake.errors == []
    log = session_logs(home)["s-1"]
    automatic = [e for e in log.of_type("compaction/start") if e["data"].get("turn") is not None]
    if mechanism == "preset":
        assert automatic and log.of_type("compaction/summary")
    else:  # past the 12,000 the id patch asked for, and still no compaction
        usage = [e["data"]["usage"] for e in log.of_type("assistant/message")]
        assert max(u["inputTokens"] + u.get("cacheReadTokens", 0) for u in usage) > 12000
        assert log.count("compaction/start") == 0
