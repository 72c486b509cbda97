"""Shared test data: the committed fixture homes (real DSH output) and the shared corpus."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURE_HOMES = REPO / "tests" / "fixtures" / "homes"
CORPUS_HOME = Path(os.environ.get("DSHWEB_CORPUS_HOME") or REPO.parent / "shared/corpus/home")
BIG_HOME = REPO / "bench" / "data" / "big-home"  # made by bench/make_big_home.py; not committed


def all_homes() -> list[Path]:
    """Every real DSH home the parity tests check: fixtures, plus the corpus and the
    benchmark home when present."""
    homes = (
        sorted(p for p in FIXTURE_HOMES.iterdir() if (p / "sessions").is_dir())
        if (FIXTURE_HOMES.is_dir())
        else []
    )
    homes.extend(home for home in (CORPUS_HOME, BIG_HOME) if (home / "sessions").is_dir())
    return homes


def host_caches(home: Path) -> dict[str, dict[str, Any]]:
    """The host's projection cache rows per session id."""
    folder = home / "storages" / "session_projcache" / "sessions"
    return {
        path.stem: json.loads(path.read_text(encoding="utf-8"))["record"]["rows"]
        for path in sorted(folder.glob("*.json"))
    }


def session_log_paths(home: Path) -> list[Path]:
    from dshweb.core.home import session_logs

    return [log.path for log in session_logs(home)]


def run_python(
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    check: bool = False,
    umask: int = -1,
) -> subprocess.CompletedProcess[str]:
    """This interpreter run on ``args`` in the checkout, in a child process, its output
    captured as text."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
        umask=umask,
    )
