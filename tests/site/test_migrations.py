"""The models moved to the feature apps that own them without touching data: a database
made by the migrations from before the move, with rows in every table (and a permission
granted), migrated to today's layout, on SQLite and on PostgreSQL (``scripts/test``
checks that today's models need no migration not written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.stores import shared_stores

EXPECTED = {
    "revisions": ["a: 1\n", "a: 2\n"],
    "restoredFrom": True,
    "revisionUser": True,
    "engine": "http://x/?token=t",
    "request": True,
    "token": True,
    "checkpoint": "00636b",
    "leaseVersion": 7,
    "collected": "01726f77",
    "chain": [True, 2],
    "rules": 1,
    "firings": 1,
    "canCompact": True,
    "compactPermissions": 1,
}


@pytest.fixture
def stores() -> Iterator[dict[str, str]]:
    """An empty PostgreSQL database (the probe migrates it from the first migration) and a
    flushed Redis database, as environment variables."""
    with shared_stores() as made:
        yield made


def _probe(tmp_path: Path, extra: dict[str, str]) -> dict[str, object]:
    (tmp_path / "data").mkdir()
    env = os.environ | {"DSHWEB_DATA_DIR": str(tmp_path / "data")} | extra
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from tests.support import migration_probe as p; p.main()",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_every_row_survives_the_move_on_sqlite(tmp_path: Path) -> None:
    assert _probe(tmp_path, {}) == EXPECTED


@pytest.mark.services
def test_every_row_survives_the_move_on_postgresql(
    tmp_path: Path,
    stores: dict[str, str],
) -> None:
    assert _probe(tmp_path, {"DATABASE_URL": stores["DATABASE_URL"]}) == EXPECTED
