"""A DSH home with a hostile file of one kind at every path dshweb reads, beside sessions
that are fine: for the tests against a real server and for ``bench/hostile_home.py``.

Anyone who can write into a DSH home (an agent a session runs can) can put there a FIFO,
a device, a link to an endless file, a huge file or an unreadable file or folder. Each
kind is put at once at every file the server reads (the home's patch layer, each
profile's patch layer and ``package.json``, a plugin's manifest in ``node_modules``, a
session log) and, for folders, where a project or session folder should be.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import FIXTURE_HOMES

GOOD_SESSIONS = ("auto-compact", "plain-turns")
FILES = (
    "cordis.patch.yml",
    "profiles/sdk/cordis.patch.yml",
    "profiles/sdk/package.json",
    "profiles/sdk/node_modules/dsh-context-truth/package.json",
    "profiles/web/cordis.patch.yml",
    "profiles/web/package.json",
    "sessions/--hostile--/log/session.v4.jsonl.zstd",
)
"""Every file of the home the server reads, relative to it."""
MANIFEST = FILES[3]
"""The one file read through the link pnpm makes (``node_modules/<package>``)."""
LINK = "is a symbolic link: dshweb follows no link inside a DSH home"


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device(path: Path) -> None:
    os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers


def _endless_link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    with path.open("wb") as sparse:
        sparse.truncate(10 << 30)  # 10 GiB, nothing of it on disk


def _unreadable(path: Path) -> None:
    path.write_text("[]\n")
    path.chmod(0)


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    make: Callable[[Path], None]
    words: str
    """What dshweb says of such a file in the home (after its path)."""
    followed: str | None = None
    """What it says of one read through pnpm's link, when that differs."""
    folder_words: str | None = None
    """What it says of such a folder where a project or session folder should be."""
    unprivileged: bool = False
    """Root reads it anyway: the server runs without that right (tests/support/unprivileged.py)."""

    def said(self, relative: str) -> str:
        words = self.followed if relative == MANIFEST and self.followed else self.words
        if "reads at most" in words and relative.endswith("package.json"):
            words = words.replace("4 MiB", "1 MiB")  # a manifest's limit
        return words


KINDS = {
    kind.name: kind
    for kind in (
        Kind("fifo", _fifo, "is a FIFO (named pipe), not a regular file"),
        Kind("device", _device, "is a character device, not a regular file"),
        Kind(
            "link to an endless file",
            _endless_link,
            LINK,
            followed="is a character device, not a regular file",
            folder_words=LINK,
        ),
        Kind("huge file", _huge, "is 10 GiB; dshweb reads at most 4 MiB"),
        Kind(
            "unreadable",
            _unreadable,
            "cannot be read: permission denied",
            folder_words="cannot be read: permission denied",
            unprivileged=True,
        ),
    )
}
HOSTILE_FOLDERS = ("sessions/--hostile-project--", "sessions/--hostile--/folder")


def hostile_home(root: Path, kind: Kind) -> Path:
    """A home of :data:`GOOD_SESSIONS` and the sdk and web profiles, with ``kind`` at each
    of :data:`FILES` (and, when the kind has folder words, :data:`HOSTILE_FOLDERS`)."""
    home = root / "home"
    shutil.copytree(FIXTURE_HOMES / "plain-turns", home)
    shutil.copytree(
        FIXTURE_HOMES / "auto-compact" / "sessions", home / "sessions", dirs_exist_ok=True
    )
    shutil.copytree(FIXTURE_HOMES / "web-presets" / "profiles" / "web", home / "profiles" / "web")
    for relative in FILES:
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        kind.make(path)
    if kind.folder_words is not None:
        for relative in HOSTILE_FOLDERS:
            folder = home / relative
            folder.parent.mkdir(parents=True, exist_ok=True)
            if kind.make is _endless_link:
                folder.symlink_to("/usr")  # 16,120 watches when a watch follows it
            else:
                folder.mkdir()
                folder.chmod(0)
    return home


def release(home: Path) -> None:
    """Make the folders of ``home`` removable again (a folder of mode 0 is not)."""
    for relative in HOSTILE_FOLDERS:
        folder = home / relative
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o755)
