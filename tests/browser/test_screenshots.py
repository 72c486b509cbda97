"""scripts/screenshots makes the docs' pictures: each page in each language and size, as
big as the window it was taken in, from a dshweb of this checkout with the demo home."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser.conftest import HEADLESS
from tests.conftest import REPO

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


def _size(png: Path) -> tuple[int, int]:
    """A PNG's width and height, from its IHDR chunk."""
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", png
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_script_makes_every_picture(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "screenshots.py"), "--out", str(tmp_path)],
        cwd=REPO,
        env=os.environ | {"DSHWEB_CHROMIUM": str(HEADLESS)},  # the pictures need no more
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    made = sorted(p.name for p in tmp_path.glob("*.png"))
    assert made == sorted(
        f"{page}-{language}-{size}.png"
        for page in ("list", "session")
        for language in ("en", "zh-hans")
        for size in ("desktop", "phone")
    )
    assert _size(tmp_path / "session-zh-hans-desktop.png") == (1440, 900)
    assert _size(tmp_path / "list-en-phone.png") == (390, 844)
    assert done.stdout.count("wrote ") == 8
    # The committed pictures are the same set (scripts/screenshots writes docs/images/).
    assert sorted(p.name for p in (REPO / "docs" / "images").glob("*.png")) == made
