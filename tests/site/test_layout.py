"""The house keeps its plan: an import inside a function that reaches into another app
hides a dependency the import contracts ([tool.importlinter]) would otherwise see, so
there is none, except in an app's ``ready()``, where Django wants its registrations.
(``lint-imports``, a pre-commit hook ``scripts/test`` runs, checks the layers themselves.)"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "dshweb"


def _owner(module: str) -> str:
    """The app (or top-level module) a dotted name of dshweb belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def crossing_local_imports(relative: Path, source: str) -> list[str]:
    """The imports inside functions of module ``relative`` (to ``dshweb/``) that reach
    into another app."""
    own = relative.parts[0].removesuffix(".py")
    found = []
    for function in ast.walk(ast.parse(source, str(relative))):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if relative.name == "apps.py" and function.name == "ready":
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = (
                    [f"dshweb.{a.name}" for a in node.names]
                    if node.module == "dshweb"
                    else [node.module]
                )
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.startswith("dshweb.") and _owner(name) != own:
                    found.append(f"{relative}:{node.lineno} {function.name}() imports {name}")
    return found


def test_no_function_imports_from_another_app() -> None:
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in crossing_local_imports(path.relative_to(PACKAGE), path.read_text())
    ]
    assert found == []


def test_the_check_sees_a_crossing_import() -> None:
    source = (
        "def f():\n    from dshweb.sessions import views\n    from dshweb import config\n"
        "    from dshweb.alerts import deliveries\n"
    )
    assert crossing_local_imports(Path("alerts/probe.py"), source) == [
        "alerts/probe.py:2 f() imports dshweb.sessions",
        "alerts/probe.py:3 f() imports dshweb.config",
    ]
    ready = source.replace("def f()", "def ready()")
    assert crossing_local_imports(Path("alerts/apps.py"), ready) == []


def django_imports(source: str) -> set[str]:
    """The modules of Django a module's source imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {name for name in found if name == "django" or name.startswith("django.")}


def test_the_page_layout_takes_only_translation_from_django() -> None:
    """[tool.importlinter] lets sessions/display and dshweb/words.py import Django, which
    it sees as one module: only its translation functions, for the words a person reads."""
    modules = [*sorted((PACKAGE / "sessions" / "display").glob("*.py")), PACKAGE / "words.py"]
    used = {path.name: django_imports(path.read_text()) for path in modules}
    assert {name for found in used.values() for name in found} == {"django.utils.translation"}
    assert django_imports("from django.db import models\nimport django.conf") == {
        "django.db",
        "django.conf",
    }
