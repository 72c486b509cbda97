"""The core stays pure: nothing under dshweb/core imports Django, Channels or the app."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "dshweb" / "core"
FORBIDDEN = ("django", "channels", "daphne", "django_htmx", "dshweb.dashboard", "dshweb.settings")


@pytest.mark.parametrize(
    "module", sorted(CORE.rglob("*.py")), ids=lambda p: str(p.relative_to(CORE))
)
def test_core_module_imports_no_framework(module: Path) -> None:
    imported: list[str] = []
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.append(node.module)
    bad = [
        name for name in imported if name.split(".")[0] in FORBIDDEN or name.startswith(FORBIDDEN)
    ]
    assert bad == []
