"""The templates' layout: each formatted by djade, run as ``.pre-commit-config.yaml``'s
hook runs it (the same Django target), and no line longer than 120 characters, so a
template reads without scrolling sideways (issue 41 found lines of 700 characters). A long
message is a ``{% blocktranslate trimmed %}`` on lines of its own; trimmed joins them with
one space, so its msgid is the one-line text (``tests/site/test_translations.py`` checks
that every msgid is translated)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

TEMPLATES = sorted((REPO / "dshweb").glob("*/templates/**/*.html"))
LONGEST = 120


def _hook(hook_id: str) -> dict[str, str]:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    (hook,) = (hook for hook in hooks if hook["id"] == hook_id)
    return dict(hook)


def test_every_template_is_walked() -> None:
    """The walk finds every template the djade hook formats, and nothing else."""
    files = re.compile(_hook("djade")["files"])
    tracked = subprocess.run(
        ["git", "ls-files", "dshweb"], cwd=REPO, capture_output=True, text=True, check=False
    )
    if tracked.returncode != 0:
        pytest.skip("not a git checkout: the hook's files cannot be listed")
    hooked = sorted(REPO / name for name in tracked.stdout.splitlines() if files.search(name))
    assert len(TEMPLATES) > 50
    assert [p.relative_to(REPO) for p in TEMPLATES] == [p.relative_to(REPO) for p in hooked]


def long_lines(paths: list[Path], longest: int = LONGEST) -> list[str]:
    """``path:line: N characters`` for each line of ``paths`` longer than ``longest``."""
    return [
        f"{path.relative_to(REPO)}:{number}: {len(line)} characters"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > longest
    ]


def test_no_template_line_is_longer_than_120_characters() -> None:
    assert long_lines(TEMPLATES) == []


def test_a_long_line_is_found() -> None:
    template = REPO / "dshweb" / "site" / "templates" / "base.html"
    longest = max(len(line) for line in template.read_text(encoding="utf-8").splitlines())
    assert long_lines([template], longest - 1) != []
    assert long_lines([template], longest) == []


def _djade() -> str:
    """djade of the dev extra: beside this interpreter, else on PATH."""
    found = shutil.which("djade", path=sysconfig.get_path("scripts")) or shutil.which("djade")
    if found is None:
        pytest.skip("djade is not installed (pip install -e '.[dev]' installs it)")
    return found


def test_templates_are_formatted_by_djade() -> None:
    """djade --check, with the arguments of the pre-commit hook, changes no template."""
    entry = shlex.split(_hook("djade")["entry"])
    assert entry[:2] == ["scripts/pre-commit-tool", "djade"] and "--check" in entry
    result = subprocess.run(
        [_djade(), *entry[2:], *(str(p) for p in TEMPLATES)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
