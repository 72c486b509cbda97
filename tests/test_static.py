"""The static files the pages rely on: both dark themes alike, the vendored scripts there."""

from __future__ import annotations

import re
from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "static"


def _declarations(block: str) -> dict[str, str]:
    return dict(re.findall(r"(--[\w-]+|color-scheme)\s*:\s*([^;]+);", block))


def test_dark_theme_is_the_same_for_auto_and_for_the_choice() -> None:
    css = (STATIC / "dshweb" / "dshweb.css").read_text(encoding="utf-8")
    auto = re.search(r':root:not\(\[data-theme="light"\]\)\s*\{(.*?)\}', css, re.DOTALL)
    chosen = re.search(r':root\[data-theme="dark"\]\s*\{(.*?)\}', css, re.DOTALL)
    light = re.search(r":root\s*\{(.*?)\}", css, re.DOTALL)
    assert auto and chosen and light
    dark = _declarations(auto.group(1))
    assert dark == _declarations(chosen.group(1))
    assert dark["color-scheme"] == "dark"
    # Every colour the light theme sets, the dark one sets too (fonts and sizes aside).
    colours = {k for k, v in _declarations(light.group(1)).items() if v.startswith("#")}
    assert colours - {"--seg-system", "--seg-tools", "--seg-messages", "--seg-used"} <= set(dark)


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
