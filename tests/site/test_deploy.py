"""deploy/: the systemd units are checked by ``systemd-analyze verify`` (the command each
runs made one that exists here: this checkout's ``dshweb``), and the reverse-proxy
files are the examples docs/https.md shows (and tests/site/test_docs_proxies.py runs)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.docs_proxies import readme_block

DEPLOY = REPO / "deploy"
UNITS = {
    # the file, the unit verified (a template's instance), where its command is installed
    "dshweb.service": ("dshweb.service", "%h/.local/bin/dshweb"),
    "dshweb-collect@.service": ("dshweb-collect@laptop.service", "/opt/dshweb/bin/dshweb"),
    "dshweb-web@.service": ("dshweb-web@8000.service", "/opt/dshweb/bin/dshweb"),
}
SYSTEMD_ANALYZE = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"


def _dshweb() -> str:
    found = Path(sys.executable).with_name("dshweb")
    assert found.is_file(), f"{found}: pip install -e . makes it ([project.scripts])"
    return str(found)


def _verify(folder: Path, units: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SYSTEMD_ANALYZE, "verify", *units],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _copies(folder: Path, edit: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """The units copied to ``folder``, each command made this checkout's ``dshweb``."""
    for name, (_, installed) in UNITS.items():
        text = (DEPLOY / name).read_text()
        assert text.count(f"ExecStart={installed} ") == 1, f"{name}: its ExecStart changed"
        text = text.replace(f"ExecStart={installed} ", f"ExecStart={_dshweb()} ")
        if edit and name in edit:
            text = text.replace(*edit[name])
        (folder / name).write_text(text)
    return [unit for unit, _ in UNITS.values()]


@pytest.mark.systemd
def test_systemd_verifies_each_unit(tmp_path: Path) -> None:
    assert sorted(p.name for p in DEPLOY.glob("*.service")) == sorted(UNITS)
    done = _verify(tmp_path, _copies(tmp_path))
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


@pytest.mark.systemd
def test_the_check_sees_a_broken_unit(tmp_path: Path) -> None:
    broken = {"dshweb-web@.service": ("Restart=on-failure", "Restart=sometimes")}
    done = _verify(tmp_path, _copies(tmp_path, broken))
    assert "restart specifier, ignoring: sometimes" in done.stderr, done.stderr


def test_the_units_run_dshweb_on_loopback_and_privately() -> None:
    for name in UNITS:
        text = (DEPLOY / name).read_text()
        assert "UMask=0077" in text, name
        assert "--host" not in text, f"{name}: dshweb serves on 127.0.0.1 by default"
    web = (DEPLOY / "dshweb-web@.service").read_text()
    assert re.search(r"^Environment=DSHWEB_COLLECT=off", web, re.M)


def test_the_units_wait_for_readiness_and_keep_a_watchdog() -> None:
    # dshweb sends READY=1 and WATCHDOG=1 (dshweb.live.systemd): a unit not of Type=notify
    # would count it started at once, one without WatchdogSec never restart a hung one.
    for name in UNITS:
        text = (DEPLOY / name).read_text()
        assert re.search(r"^Type=notify$", text, re.M), name
        assert re.search(r"^WatchdogSec=[1-9]\d*$", text, re.M), name
        assert "NotifyAccess=" not in text, f"{name}: the main process itself notifies"


@pytest.mark.parametrize(
    ("language", "file"), [("nginx", "nginx.conf"), ("caddyfile", "Caddyfile")]
)
def test_the_proxy_files_are_the_docs_examples(language: str, file: str) -> None:
    assert (DEPLOY / file).read_text() == readme_block(language)
