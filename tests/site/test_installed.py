"""The install hints say the command of the tool that made dshweb's environment
(issue 43: ``doctor`` and the engine page said ``pip install`` to a pipx user)."""

from __future__ import annotations

import pytest

from dshweb.installed import Installer, add_extra, installer


@pytest.mark.parametrize(
    ("prefix", "made_by", "command"),
    [
        ("/home/ana/.local/share/pipx/venvs/dshweb", Installer.PIPX, "pipx install --force"),
        ("/home/ana/.local/pipx/venvs/dshweb", Installer.PIPX, "pipx install --force"),
        ("/opt/pipx/venvs/dshweb", Installer.PIPX, "pipx install --force"),
        ("/home/ana/.local/share/uv/tools/dshweb", Installer.UV_TOOL, "uv tool install --force"),
        ("/home/ana/work/dshweb/.venv", Installer.PIP, "pip install"),
        ("/usr", Installer.PIP, "pip install"),
        ("/home/pipx/venv", Installer.PIP, "pip install"),  # a user named pipx: no venvs/
    ],
)
def test_each_installer_gets_its_own_command(prefix: str, made_by: Installer, command: str) -> None:
    assert installer(prefix) is made_by
    assert add_extra("engine", prefix) == f"{command} 'dshweb[engine]'"
