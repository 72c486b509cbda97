"""The static files the pages rely on: the vendored scripts are there, as their README says."""

from __future__ import annotations

import re

from tests.conftest import REPO

STATIC = REPO / "dshweb" / "site" / "static"


def test_vendored_scripts_match_their_readme() -> None:
    readme = (STATIC / "vendor" / "README.md").read_text(encoding="utf-8")
    htmx = (STATIC / "vendor" / "htmx" / "htmx.min.js").read_text(encoding="utf-8")
    (version,) = re.findall(r'version:"(2\.[\d.]+)"', htmx)
    assert f"| `htmx.org` | {version} |" in readme
    assert 'htmx.defineExtension("ws"' in (
        STATIC / "vendor" / "htmx-ext-ws" / "ws.min.js"
    ).read_text(encoding="utf-8")
    for folder in ("htmx", "htmx-ext-ws"):
        assert (STATIC / "vendor" / folder / "LICENSE").is_file()
