"""The data folder on a shared host: 0700, the database and the secret key 0600, for a
new install and for one made before (tightened on start, with a log line).

Each test runs the real ``manage.py dshweb_bootstrap`` (``scripts/start`` runs it on every
start) in a child process with the everyday umask 022, on a real data folder.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from dshweb.private_data import make_private
from tests.conftest import run_python


def _manage(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The embedded default install (db.sqlite3 in the data folder), even on a PostgreSQL run.
    prefixes = ("DSHWEB_", "DJANGO_", "DATABASE_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env |= {
        "DSHWEB_DATA_DIR": str(data),
        "DSH_HOME": str(data.parent / "home"),
        "DSHWEB_NO_DEMO": "1",
        "DJANGO_SETTINGS_MODULE": "dshweb.settings",
    }
    done = run_python("manage.py", *args, env=env, umask=0o022)
    assert done.returncode == 0, done.stderr
    return done


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_install_is_private(tmp_path: Path) -> None:
    data = tmp_path / "var"
    _manage(data, "dshweb_bootstrap")
    assert _mode(data) == 0o700
    assert _mode(data / "db.sqlite3") == 0o600
    assert _mode(data / "secret_key") == 0o600


def test_an_existing_install_is_made_private_on_start(tmp_path: Path) -> None:
    data = tmp_path / "var"
    _manage(data, "dshweb_bootstrap")
    key = (data / "secret_key").read_text()
    os.chmod(data, 0o755)  # as main made them before
    os.chmod(data / "db.sqlite3", 0o644)
    os.chmod(data / "secret_key", 0o644)
    done = _manage(data, "dshweb_bootstrap")
    assert _mode(data) == 0o700
    assert _mode(data / "db.sqlite3") == 0o600
    assert _mode(data / "secret_key") == 0o600
    assert (data / "secret_key").read_text() == key  # tightened, not replaced
    assert f"{data}: mode 0755 -> 0700" in done.stderr
    assert f"{data / 'secret_key'}: mode 0644 -> 0600" in done.stderr
    assert f"{data / 'db.sqlite3'}: mode 0644 -> 0600" in done.stderr
    assert "mode" not in _manage(data, "dshweb_bootstrap").stderr  # nothing left to say


def test_a_shared_sticky_folder_is_left_alone_and_named(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (shared / "secret_key").write_text("k")
    os.chmod(shared / "secret_key", 0o644)
    (shared / "elsewhere").write_text("not ours")
    os.chmod(shared / "elsewhere", 0o644)
    changes = make_private(shared)
    assert _mode(shared) == 0o1777
    assert any("is shared (mode 1777" in change for change in changes)
    assert _mode(shared / "secret_key") == 0o600
    assert _mode(shared / "elsewhere") == 0o644  # only dshweb's own secrets


def test_a_linked_secret_is_not_followed(tmp_path: Path) -> None:
    data = tmp_path / "var"
    data.mkdir(mode=0o700)
    outside = tmp_path / "outside"
    outside.write_text("someone else's")
    os.chmod(outside, 0o644)
    (data / "secret_key").symlink_to(outside)
    assert make_private(data) == []
    assert _mode(outside) == 0o644
