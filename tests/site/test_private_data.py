"""The data folder on a shared host: 0700, the database and the secret key 0600, for a
new install and for one made before (tightened on start, with a log line); a folder or a
file others can write, or another user's, refused (tests/site/test_refused_settings.py
tries each against the real server).

Each test runs the real ``manage.py dshweb_bootstrap`` (``scripts/start`` runs it on every
start) in a child process with the everyday umask 022, on a real data folder.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from dshweb.private_data import SECRET_FILES, data_problems, make_private
from dshweb.setting_errors import ConfigurationError
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


@pytest.fixture(scope="module")
def new_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder as the first bootstrap leaves it: look, never change (copy it)."""
    data = tmp_path_factory.mktemp("install") / "var"
    _manage(data, "dshweb_bootstrap")
    return data


def test_a_new_install_is_private(new_install: Path) -> None:
    data = new_install
    assert _mode(data) == 0o700
    assert _mode(data / "db.sqlite3") == 0o600
    assert _mode(data / "secret_key") == 0o600


def test_an_existing_install_is_made_private_on_start(tmp_path: Path, new_install: Path) -> None:
    data = tmp_path / "var"
    shutil.copytree(new_install, data, symlinks=True)  # the same files, modes and times
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


def test_a_shared_sticky_folder_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (shared / "secret_key").write_text("k")
    os.chmod(shared / "secret_key", 0o644)
    with pytest.raises(ConfigurationError) as refused:
        make_private(shared)
    assert refused.value.setting == "DSHWEB_DATA_DIR"
    assert refused.value.problem.startswith(f"{shared} is writable by others (mode 1777)")
    assert "point DSHWEB_DATA_DIR at a folder of your own" in refused.value.fix
    assert _mode(shared) == 0o1777
    assert _mode(shared / "secret_key") == 0o644  # nothing in it touched either


def test_a_linked_secret_is_refused_and_not_followed(tmp_path: Path) -> None:
    data = tmp_path / "var"
    data.mkdir(mode=0o700)
    outside = tmp_path / "outside"
    outside.write_text("someone else's")
    os.chmod(outside, 0o644)
    (data / "secret_key").symlink_to(outside)
    with pytest.raises(ConfigurationError, match="secret_key is a symbolic link: dshweb follows"):
        make_private(data)
    assert _mode(outside) == 0o644


def test_a_linked_data_folder_is_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.chmod(target, 0o755)
    (tmp_path / "var").symlink_to(target)
    assert make_private(tmp_path / "var") == [f"{tmp_path / 'var'}: mode 0755 -> 0700"]
    assert _mode(target) == 0o700
    assert data_problems(tmp_path / "var", names=SECRET_FILES) == []


def test_a_folder_writable_by_others_is_refused_one_merely_readable_tightened(
    tmp_path: Path,
) -> None:
    data = tmp_path / "var"
    data.mkdir()
    os.chmod(data, 0o775)
    (problem,) = data_problems(data, names=SECRET_FILES)
    assert problem.problem.startswith(f"{data} is writable by others (mode 0775)")
    assert problem.fix.endswith(f"chmod 700 {data}")
    os.chmod(data, 0o755)
    (data / "db.sqlite3").write_bytes(b"")
    os.chmod(data / "db.sqlite3", 0o664)
    (problem,) = data_problems(data, names=SECRET_FILES)
    assert problem.problem.startswith(f"{data / 'db.sqlite3'} is writable by others (mode 0664)")
    os.chmod(data / "db.sqlite3", 0o644)
    assert data_problems(data, names=SECRET_FILES) == []
    assert make_private(data) == [
        f"{data}: mode 0755 -> 0700",
        f"{data / 'db.sqlite3'}: mode 0644 -> 0600",
    ]
