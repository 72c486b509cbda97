"""A DSH profile as one value: its folder, its patch layers in order, its plugins.

Contract (DSH_FACTS §1, §9):

- :meth:`Profile.read` reads the profile's ``package.json`` and, for each plugin it
  names (bundles and dependencies) and ``dsh-context-truth`` (which may be installed
  without being named), ``node_modules/<package>/package.json``, once. It never fails:
  a file that is missing or not JSON reads as nothing named, not installed; one that
  :mod:`dshweb.core.files` refuses (a FIFO, a device, a link, too big, unreadable) reads
  the same and is named in :attr:`Profile.problems`. The one link followed is the one
  ``pnpm`` makes for a package, ``node_modules/<package>``.
- The visible patch layers, in the order DSH applies them, are
  ``profiles/<p>/cordis.patch.yml`` (the one file the settings pages write),
  ``$DSH_HOME/cordis.patch.yml``, then the ``--patch`` overlays. Each bundle's patch
  comes before them all, but lives inside the ``dsh`` executable, unseen here.
- Layers are named, not read: a patch file changes between reads, and a writer compares
  against the bytes it read (:mod:`dshweb.core.profile.patch`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from dshweb.core.files import FileRefused, read_file

PATCH_FILE = "cordis.patch.yml"
PACKAGE_FILE = "package.json"
PROFILE_FILES = frozenset({PATCH_FILE, PACKAGE_FILE})
"""The names of the files whose change changes what a profile sets."""
MODULES = "node_modules"
MANIFEST_LIMIT = 1 << 20
"""The largest ``package.json`` read (a profile's is a few hundred bytes)."""

WEB_APP_BUNDLE = "@deepseek-ai/dsh-web-app"
CONTEXT_TRUTH_ID = "context-truth"
CONTEXT_TRUTH_PACKAGE = "dsh-context-truth"


class LayerKind(StrEnum):
    PROFILE = "profile"
    HOME = "home"
    OVERLAY = "overlay"


@dataclass(frozen=True, slots=True)
class Layer:
    """One visible patch file of a profile (it may not exist yet)."""

    kind: LayerKind
    path: Path
    home: Path | None = None
    """The DSH home the file lies in (no link below it is followed); ``None`` for an
    overlay a person named, read wherever it leads."""

    @property
    def writable(self) -> bool:
        """The settings pages write the profile's own patch file and no other."""
        return self.kind is LayerKind.PROFILE

    @property
    def label(self) -> str:
        return f"{self.kind.value} patch"


@dataclass(frozen=True, slots=True)
class Plugin:
    """One npm package of a profile, as its ``package.json`` and ``node_modules`` say.

    ``bundle``: listed in ``dsh.profile.bundles`` (what assembles it); ``dependency``:
    listed in ``dependencies`` (which alone assembles nothing); ``installed``: its
    ``package.json`` is in the profile's ``node_modules``; ``version``: the version that
    file states, when it states one.
    """

    package: str
    bundle: bool = False
    dependency: bool = False
    installed: bool = False
    version: str | None = None

    @property
    def is_context_truth(self) -> bool:
        return self.package == CONTEXT_TRUTH_PACKAGE


def profile_folder(home: Path, name: str) -> Path:
    return home / "profiles" / name


def profile_names(home: Path) -> list[str]:
    """Every profile folder of the home, sorted (a link is not a profile folder)."""
    try:
        with os.scandir(home / "profiles") as entries:
            return sorted(e.name for e in entries if _is_folder(e))
    except OSError:
        return []


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def home_layer(home: Path) -> Layer:
    """The home's own patch layer, which every profile of it reads."""
    return Layer(LayerKind.HOME, home / PATCH_FILE, home)


def patch_layers(home: Path, name: str, extra_patches: Sequence[Path] = ()) -> tuple[Layer, ...]:
    """The visible patch layers of profile ``name``, in the order DSH applies them."""
    return (
        Layer(LayerKind.PROFILE, profile_folder(home, name) / PATCH_FILE, home),
        home_layer(home),
        *(Layer(LayerKind.OVERLAY, path) for path in extra_patches),
    )


def _package(path: Path, home: Path, problems: list[str]) -> dict[str, Any]:
    """The profile's own ``package.json`` ({} when missing, refused or not an object)."""
    try:
        data = read_file(path, limit=MANIFEST_LIMIT, home=home)
    except FileRefused as refused:
        problems.append(str(refused))
        return {}
    return {} if data is None else _json_value(data)


def _json_value(data: bytes) -> dict[str, Any]:
    try:
        found = json.loads(data)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _bundles(package: dict[str, Any]) -> tuple[str, ...]:
    try:
        bundles = package["dsh"]["profile"]["bundles"]
    except (KeyError, TypeError):
        return ()
    return tuple(str(b) for b in bundles) if isinstance(bundles, list) else ()


def _modules(folder: Path) -> Path | None:
    """``folder/node_modules`` when the profile folder and it are real folders of the home
    (the packages in it may be the links pnpm makes, read wherever they lead)."""
    modules = folder / MODULES
    try:
        real = all(stat.S_ISDIR(os.lstat(f).st_mode) for f in (folder.parent, folder, modules))
    except OSError:
        return None
    return modules if real else None


def _installed(modules: Path | None, package: str, problems: list[str]) -> tuple[bool, str | None]:
    """Whether ``package`` is in ``modules`` (:func:`_modules`), and the version it states."""
    parts = PurePosixPath(package).parts
    if modules is None or not parts or package.startswith("/") or ".." in parts:
        return False, None  # not a package name: nothing outside node_modules is read
    manifest = modules.joinpath(*parts, PACKAGE_FILE)
    try:
        data = read_file(manifest, limit=MANIFEST_LIMIT, follow_links=True)
    except FileRefused as refused:
        problems.append(str(refused))
        return False, None
    if data is None:
        return False, None
    version = _json_value(data).get("version")
    return True, version if isinstance(version, str) else None


@dataclass(frozen=True, slots=True)
class Profile:
    """Profile ``name`` of the DSH home ``home``, as read by :meth:`read`."""

    home: Path
    name: str
    bundles: tuple[str, ...]
    """``dsh.profile.bundles`` of its ``package.json``, in order."""
    plugins: tuple[Plugin, ...]
    """Its bundles, then its dependencies, then ``dsh-context-truth`` if neither names it."""
    extra_patches: tuple[Path, ...] = ()
    """``--patch`` overlays, applied after every layer of the profile."""
    problems: tuple[str, ...] = ()
    """Each of its files that could not be read, and why (the file named)."""
    package_refused: str | None = None
    """Why its own ``package.json`` could not be read (what it assembles is unknown)."""

    @classmethod
    def read(cls, home: Path, name: str, extra_patches: Sequence[Path] = ()) -> Profile:
        folder = profile_folder(home, name)
        problems: list[str] = []
        package = _package(folder / PACKAGE_FILE, home, problems)
        package_refused = problems[0] if problems else None
        bundles = _bundles(package)
        dependencies = package.get("dependencies")
        named = tuple(dependencies) if isinstance(dependencies, dict) else ()
        plugins = []
        modules = _modules(folder)
        for package_name in dict.fromkeys([*bundles, *named, CONTEXT_TRUTH_PACKAGE]):
            installed, version = _installed(modules, package_name, problems)
            plugins.append(
                Plugin(
                    package_name,
                    bundle=package_name in bundles,
                    dependency=package_name in named,
                    installed=installed,
                    version=version,
                )
            )
        return cls(
            home,
            name,
            bundles,
            tuple(plugins),
            tuple(extra_patches),
            tuple(problems),
            package_refused,
        )

    @property
    def folder(self) -> Path:
        return profile_folder(self.home, self.name)

    @property
    def layers(self) -> tuple[Layer, ...]:
        return patch_layers(self.home, self.name, self.extra_patches)

    @property
    def patch_path(self) -> Path:
        """The profile's own patch file: the layer the settings pages write."""
        return next(layer.path for layer in self.layers if layer.writable)

    @property
    def web_app(self) -> bool:
        """Built on the web-app bundle: its compaction engines run inside agent presets."""
        return WEB_APP_BUNDLE in self.bundles

    def plugin(self, package: str) -> Plugin:
        """The plugin ``package`` (neither named nor installed when the profile lacks it)."""
        return next((p for p in self.plugins if p.package == package), Plugin(package))

    @property
    def context_truth(self) -> Plugin:
        return next(p for p in self.plugins if p.is_context_truth)
