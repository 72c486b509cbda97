"""How this dshweb was installed, and the one command that adds an extra to it.

A hint that says ``pip install`` to a person who installed dshweb with pipx (or uv's tool
install) sends them to change another Python's packages, or to pip's refusal of an
externally managed one; each says the command of the tool that made this environment.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import PurePath


class Installer(StrEnum):
    PIP = "pip"
    PIPX = "pipx"
    UV_TOOL = "uv tool"


def installer(prefix: str = sys.prefix) -> Installer:
    """The tool that made the environment at ``prefix``: pipx keeps each application in
    ``…/pipx/venvs/NAME``, uv in ``…/uv/tools/NAME``; anything else is pip's."""
    parts = PurePath(prefix).parts
    for tool, kind in (("pipx", Installer.PIPX), ("uv", Installer.UV_TOOL)):
        folder = "venvs" if tool == "pipx" else "tools"
        for at in range(len(parts) - 2):
            if parts[at] == tool and parts[at + 1] == folder:
                return kind
    return Installer.PIP


def add_extra(extra: str, prefix: str = sys.prefix) -> str:
    """The command that installs dshweb with ``extra`` into this environment."""
    match installer(prefix):
        case Installer.PIPX:
            return f"pipx install --force 'dshweb[{extra}]'"
        case Installer.UV_TOOL:
            return f"uv tool install --force 'dshweb[{extra}]'"
        case _:
            return f"pip install 'dshweb[{extra}]'"
