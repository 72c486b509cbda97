"""A home whose profile ``p`` is built on some bundles with one patch layer (and maybe
a home-wide layer): what the profile readers' tests read."""

from __future__ import annotations

import json
from pathlib import Path


def layered_home(
    tmp_path: Path, bundles: list[str], patch: str, home_patch: str | None = None
) -> Path:
    profile = tmp_path / "profiles" / "p"
    profile.mkdir(parents=True)
    (profile / "package.json").write_text(json.dumps({"dsh": {"profile": {"bundles": bundles}}}))
    (profile / "cordis.patch.yml").write_text(patch)
    if home_patch is not None:
        (tmp_path / "cordis.patch.yml").write_text(home_patch)
    return tmp_path
