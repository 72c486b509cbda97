"""The profile as one value: its layers, its plugins and their versions (core/profile)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dshweb.core.profile.effective import effective_settings
from dshweb.core.profile.patch import read_patch
from dshweb.core.profile.profile import (
    CONTEXT_TRUTH_PACKAGE,
    WEB_APP_BUNDLE,
    LayerKind,
    Plugin,
    Profile,
    profile_names,
)


def write_package(folder: Path, package: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text(json.dumps(package), "utf-8")


def install(folder: Path, name: str, manifest: str) -> None:
    target = folder / "node_modules" / name
    target.mkdir(parents=True)
    (target / "package.json").write_text(manifest, "utf-8")


def test_layers_in_the_order_dsh_applies_them(tmp_path: Path) -> None:
    extra = tmp_path / "extra.yml"
    profile = Profile.read(tmp_path, "web", [extra])
    assert [(layer.kind, layer.path, layer.writable) for layer in profile.layers] == [
        (LayerKind.PROFILE, tmp_path / "profiles" / "web" / "cordis.patch.yml", True),
        (LayerKind.HOME, tmp_path / "cordis.patch.yml", False),
        (LayerKind.OVERLAY, extra, False),
    ]
    assert profile.patch_path == tmp_path / "profiles" / "web" / "cordis.patch.yml"
    assert [layer.label for layer in profile.layers] == [
        "profile patch",
        "home patch",
        "overlay patch",
    ]


def test_plugins_and_versions_read_once(tmp_path: Path) -> None:
    folder = tmp_path / "profiles" / "p"
    write_package(
        folder,
        {
            "dependencies": {"dsh-context-truth": "1", "left-pad": "1"},
            "dsh": {"profile": {"bundles": ["@deepseek-ai/dsh-base", WEB_APP_BUNDLE]}},
        },
    )
    install(folder, CONTEXT_TRUTH_PACKAGE, '{"version": "0.1.3"}')
    install(folder, "@deepseek-ai/dsh-base", '{"version": "0.2.1"}')
    profile = Profile.read(tmp_path, "p")
    (folder / "package.json").unlink()  # read once: the value does not change after
    assert profile.bundles == ("@deepseek-ai/dsh-base", WEB_APP_BUNDLE)
    assert profile.web_app
    assert profile.plugins == (
        Plugin("@deepseek-ai/dsh-base", bundle=True, installed=True, version="0.2.1"),
        Plugin(WEB_APP_BUNDLE, bundle=True),
        Plugin(CONTEXT_TRUTH_PACKAGE, dependency=True, installed=True, version="0.1.3"),
        Plugin("left-pad", dependency=True),
    )
    assert profile.context_truth.is_context_truth and profile.context_truth.version == "0.1.3"
    assert profile.plugin("absent") == Plugin("absent")


@pytest.mark.parametrize(
    ("package", "manifest", "bundles", "installed", "version"),
    [
        (None, None, (), False, None),  # no package.json, nothing installed
        ("not json", "not json", (), True, None),
        ([1, 2], "[]", (), True, None),
        ({"dsh": {"profile": 3}}, '{"version": 3}', (), True, None),
        ({"dsh": {"profile": {"bundles": "x"}}}, '{"version": "1.0.0"}', (), True, "1.0.0"),
        (
            {"dsh": {"profile": {"bundles": ["dsh-context-truth"]}}},
            None,
            ("dsh-context-truth",),
            False,
            None,
        ),
    ],
)
def test_a_profile_that_says_little_still_reads(
    tmp_path: Path,
    package: object,
    manifest: str | None,
    bundles: tuple[str, ...],
    installed: bool,
    version: str | None,
) -> None:
    folder = tmp_path / "profiles" / "p"
    folder.mkdir(parents=True)
    if isinstance(package, str):
        (folder / "package.json").write_text(package, "utf-8")
    elif package is not None:
        write_package(folder, package)
    if manifest is not None:
        install(folder, CONTEXT_TRUTH_PACKAGE, manifest)
    profile = Profile.read(tmp_path, "p")
    assert profile.bundles == bundles and not profile.web_app
    truth = profile.context_truth
    assert (truth.bundle, truth.installed, truth.version) == (bool(bundles), installed, version)


def test_a_name_that_is_not_a_package_is_not_looked_up(tmp_path: Path) -> None:
    write_package(tmp_path / "profiles" / "p", {"dependencies": {"../../outside": "1"}})
    write_package(tmp_path / "profiles" / "outside", {"version": "9"})
    plugin = Profile.read(tmp_path, "p").plugin("../../outside")
    assert plugin == Plugin("../../outside", dependency=True)


def test_profile_names(tmp_path: Path) -> None:
    assert profile_names(tmp_path) == []
    for name in ("web", "sdk"):
        (tmp_path / "profiles" / name).mkdir(parents=True)
    (tmp_path / "profiles" / "stray.txt").write_text("")
    assert profile_names(tmp_path) == ["sdk", "web"]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("- insert:\n    - id: context-truth\n      name: dsh-context-truth\n", [True]),
        ("- insert:\n    - id: ct\n      name: dsh-context-truth\n", [True]),
        ("- insert:\n    - id: context-truth\n      name: other\n", [False]),
        ("- insert:\n    - name: x\n      config: {note: context-truth}\n", [False]),
        ("- id: context-truth\n  config: {language: zh}\n", []),
        (
            "- insert:\n    - id: a\n      name: a\n    - id: b\n      name: dsh-context-truth\n",
            [False, True],
        ),
    ],
)
def test_an_inserted_row_is_context_truth_by_its_module(
    tmp_path: Path, text: str, found: list[bool]
) -> None:
    path = tmp_path / "cordis.patch.yml"
    path.write_text(text, "utf-8")
    rows = read_patch(path).inserted_rows()
    assert [row.is_context_truth for row in rows] == found


def test_a_hostile_file_is_named_and_nothing_waits_for_it(tmp_path: Path) -> None:
    """A FIFO in place of the profile's package.json and of a plugin's manifest: read as
    nothing there, each named in ``problems``; what the profile sets is then not known
    (the estimate says so instead of guessing the engine)."""
    folder = tmp_path / "profiles" / "sdk"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "package.json")
    (folder / "node_modules" / CONTEXT_TRUTH_PACKAGE).mkdir(parents=True)
    os.mkfifo(folder / "node_modules" / CONTEXT_TRUTH_PACKAGE / "package.json")
    profile = Profile.read(tmp_path, "sdk")  # a plain open of either would wait for ever
    fifo = "is a FIFO (named pipe), not a regular file: dshweb does not read it"
    assert profile.problems == (
        f"{folder}/package.json {fifo}",
        f"{folder}/node_modules/{CONTEXT_TRUTH_PACKAGE}/package.json {fifo}",
    )
    assert profile.package_refused == profile.problems[0]
    assert profile.context_truth == Plugin(CONTEXT_TRUTH_PACKAGE)
    settings = effective_settings(tmp_path, "sdk")
    assert settings.engine is None
    assert settings.error == f"DSH cannot load profile 'sdk': {folder}/package.json {fifo}"


def test_a_plugin_is_read_through_the_link_pnpm_makes_and_no_other(tmp_path: Path) -> None:
    folder = tmp_path / "profiles" / "sdk"
    store = folder / "node_modules" / ".pnpm" / "dsh-context-truth@0.1.3"
    store.mkdir(parents=True)
    (store / "package.json").write_text('{"version": "0.1.3"}')
    (folder / "node_modules" / CONTEXT_TRUTH_PACKAGE).symlink_to(store)
    assert Profile.read(tmp_path, "sdk").context_truth.version == "0.1.3"
    # a profile folder that is a link is no profile of the home: nothing read through it
    (tmp_path / "profiles" / "linked").symlink_to(folder)
    assert profile_names(tmp_path) == ["sdk"]
    linked = Profile.read(tmp_path, "linked")
    assert linked.context_truth == Plugin(CONTEXT_TRUTH_PACKAGE)
    assert linked.package_refused == (
        f"{tmp_path}/profiles/linked is a symbolic link: dshweb follows no link inside a DSH home"
    )
