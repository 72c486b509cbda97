"""docs/development.md's "How it works" and "The house's words" name only modules and folders
that exist: a module moved or renamed without the diagram or the glossary following fails here."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

SECTION = "## How it works"
GLOSSARY = "## The house's words"
PATH = re.compile(r"dshweb/[\w/]+(?:\.py)?|(?<![\w./-])(?:\w+/)*\w+(?:\.py|/)")
"""``dshweb/live/hub.py``, ``core/fold/checkpoint.py``, ``reader.py``, ``dshweb/dashboard``,
``dshweb/core/``; not ``$DSH_HOME/sessions/…`` (a DSH home's folders)."""


def how_it_works(section: str = SECTION) -> str:
    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    start = text.index(f"\n{section}\n")
    end = text.find("\n## ", start + len(section) + 2)
    return text[start : end if end != -1 else None]


def named_paths(section: str) -> set[str]:
    """Modules (``….py``) and paths in dshweb/ (``dshweb/…``, or ``core/…`` and the like:
    a path whose first folder is one of dshweb/'s)."""
    packages = {path.name for path in (REPO / "dshweb").iterdir() if path.is_dir()}
    found = {match.group(0).rstrip("/") for match in PATH.finditer(section)}
    return {
        path
        for path in found
        if path.endswith(".py") or path.split("/")[0] in {"dshweb", "tests", *packages}
    }


def test_the_section_names_modules() -> None:
    names = named_paths(how_it_works())
    assert {"dshweb/live/hub.py", "reader.py", "dshweb/core"} <= names, names


def test_the_glossary_names_modules() -> None:
    names = named_paths(how_it_works(GLOSSARY))
    assert {"core/fold/told.py", "collect/shown.py", "live/hub.py"} <= names, names


@pytest.mark.parametrize("section", [SECTION, GLOSSARY])
def test_every_module_it_names_exists(section: str) -> None:
    package = REPO / "dshweb"
    modules = {path.relative_to(REPO).as_posix() for path in package.rglob("*.py")}
    missing = []
    for name in sorted(named_paths(how_it_works(section))):
        if name.startswith(("dshweb/", "tests/")):
            found = (REPO / name).exists()
        elif (package / name).is_dir():  # a package named alone: ``alerts/``
            found = True
        elif "/" in name:  # ``core/fold/checkpoint.py``, ``core/listing/``: under dshweb/
            found = (package / name).exists()
        else:  # a module named alone, in the diagram's part of the data flow
            found = any(module.endswith(f"/{name}") for module in modules)
        if not found:
            missing.append(name)
    assert missing == [], f"docs/development.md's {section!r} names what is not there: {missing}"
