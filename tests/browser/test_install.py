"""dshweb as a person installs it: the wheel built from this checkout, installed with pip
into a fresh venv outside the checkout with no extras, served by ``dshweb serve`` from a
folder outside the checkout, signed in to in Chromium with the password it printed.

pip resolves the wheel's requirements with no index, from a wheelhouse of the very
distributions the tests' own environment runs (``tests/support/wheelhouse.py``): the
same install, without fetching and unpacking the world again for each run.

The build runs ``python -m build`` (wheel and sdist, each in an isolated environment)
and ``twine check``; the installed tree must hold the templates, static files and demo
home, and no tests.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.conftest import FIXTURE_HOMES, REPO, run_python
from tests.support.server import Process, free_port, spawn, terminate
from tests.support.wheelhouse import wheelhouse

pytestmark = [pytest.mark.install, pytest.mark.browser, pytest.mark.timeout(600)]

INSTALL_TIMEOUT = 400
PAGE_MS = 20_000


@dataclass(frozen=True, slots=True)
class Built:
    wheel: Path
    sdist: Path
    wheels: Path
    """A wheelhouse of what the wheel needs, its ``team`` extra included."""

    def pip_install(self, venv: Path, *targets: str) -> list[str]:
        """pip in ``venv`` installing ``targets`` with no index but :attr:`wheels`."""
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        return [*pip, "--no-index", "--find-links", str(self.wheels), *targets]


@dataclass(frozen=True, slots=True)
class Installed:
    root: Path
    """A folder outside the checkout: the venv, the user's home, the DSH home."""
    venv: Path
    user_home: Path

    def program(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def env(self) -> dict[str, str]:
        """A person's environment: nothing of dshweb's or the tests' settings, a home of
        its own (so the data folder is its ``~/.local/share/dshweb``)."""
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "PIP_INDEX_URL", "PIP_FIND_LINKS")
        env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
        # pip's downloads stay in this user's cache (the same packages, fetched once).
        env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
        env.update(HOME=str(self.user_home), DSH_TELEMETRY_MODE="DISABLED")
        # The system's programs, not the checkout's venv (whose dsh the doctor would find).
        system = [p for p in env.get("PATH", "/usr/bin:/bin").split(":") if str(REPO) not in p]
        env["PATH"] = ":".join([str(self.venv / "bin"), *system])
        return env


def _wait_for_login(port: int, process: Process, log: Path) -> None:
    """Until ``dshweb serve`` answers its login page (it migrates a new database first)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, f"dshweb serve exited:\n{log.read_text()}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2):
                return
        except (OSError, urllib.error.URLError):
            time.sleep(0.2)
    pytest.fail(f"dshweb serve did not answer in 120 s:\n{log.read_text()}")


def _run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@contextmanager
def _once(tmp_path_factory: pytest.TempPathFactory, run: str, name: str) -> Iterator[Path]:
    """A folder ``name`` shared by this run's test workers, held under a lock: the first
    worker makes what it holds, the others find it made (``done`` in it)."""
    folder = tmp_path_factory.getbasetemp().parent / f"dshweb-{run}-{name}"
    folder.mkdir(exist_ok=True)
    with (folder.parent / f"{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder


def _source_tree(into: Path) -> Path:
    """A copy of the checkout's sources (what git would hold; nothing built, no venv), so
    the build writes nothing into the checkout."""
    ignored = shutil.ignore_patterns(
        ".*", "*.egg-info", "build", "dist", "__pycache__", "test-artifacts", "var", "data"
    )
    shutil.copytree(REPO, into, ignore=ignored)
    return into


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory, testrun_uid: str) -> Built:
    with _once(tmp_path_factory, testrun_uid, "dist") as out:
        if not (out / "done").exists():
            tree = _source_tree(out / "source")
            # Isolated as ever; uv, where the tests' environment has it (scripts/test's
            # does), makes its build environments in 3.2 s of CPU for pip's 5.4.
            uv = ["--installer", "uv"] if importlib.util.find_spec("uv") else []
            build = [sys.executable, "-m", "build", *uv, "--outdir", str(out), str(tree)]
            _run(build, cwd=out)
            made = [str(p) for p in [*out.glob("dshweb-*.whl"), *out.glob("dshweb-*.tar.gz")]]
            _run([sys.executable, "-m", "twine", "check", "--strict", *made], cwd=out)
            (wheel,) = out.glob("dshweb-*.whl")
            wheelhouse(out / "wheelhouse", wheel, {"team"})
            (out / "done").touch()
    wheels, sdists = list(out.glob("dshweb-*.whl")), list(out.glob("dshweb-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(out.iterdir())
    return Built(wheels[0], sdists[0], out / "wheelhouse")


def _install(root: Path, built: Built) -> Installed:
    made = Installed(root, root / "venv", root / "user")
    made.user_home.mkdir(exist_ok=True)
    venv.create(made.venv, with_pip=True)
    _run(built.pip_install(made.venv, str(built.wheel)), cwd=root, env=made.env())
    return made


@pytest.fixture(scope="session")
def installed(
    built: Built, tmp_path_factory: pytest.TempPathFactory, testrun_uid: str
) -> Installed:
    """The wheel installed with no extras into a fresh venv outside the checkout."""
    with _once(tmp_path_factory, testrun_uid, "installed") as root:
        if not (root / "done").exists():
            made = _install(root, built)
            for team_only in ("psycopg", "channels_redis"):
                found = subprocess.run(
                    [made.program("python"), "-c", f"import {team_only}"], capture_output=True
                )
                assert found.returncode != 0, f"{team_only} is in the base install"
            (root / "done").touch()
    return Installed(root, root / "venv", root / "user")


def test_the_wheel_holds_what_a_server_needs_and_no_tests(built: Built) -> None:
    names = zipfile.ZipFile(built.wheel).namelist()
    needed = (
        "dshweb/site/templates/base.html",
        "dshweb/accounts/templates/registration/login.html",
        "dshweb/site/static/vendor/htmx/htmx.min.js",
        "dshweb/site/static/dshweb/live.js",
        "dshweb/demo/replay/session.v4.jsonl.zstd",
        "dshweb/demo/home/profiles/sdk/cordis.patch.yml",
        "dshweb/site/migrations/0001_initial.py",
        "dshweb/locale/zh_Hans/LC_MESSAGES/django.mo",
        "dshweb/api/monitoring/grafana-dashboard.json",
        "dshweb/api/monitoring/prometheus-rules.yml",
    )
    assert [n for n in needed if n not in names] == []
    logs = [n for n in names if n.startswith("dshweb/demo/home/sessions/")]
    assert any(n.endswith(".jsonl.zstd") for n in logs), logs
    assert [n for n in names if n.startswith("tests/") or "/tests/" in n] == []
    sdist = subprocess.run(
        ["tar", "-tzf", str(built.sdist)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert [n for n in sdist if "/tests/" in n or "/bench/" in n] == []
    assert any(n.endswith("dshweb/site/templates/base.html") for n in sdist)
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert (
        entry
        and "dshweb = dshweb.site.program:main"
        in zipfile.ZipFile(built.wheel).read(entry[0]).decode()
    )


def test_the_installed_package_serves_a_home_to_a_browser(
    installed: Installed, browser: Browser
) -> None:
    site = Path(
        _run(
            [
                installed.program("python"),
                "-c",
                "import dshweb, os; print(os.path.dirname(dshweb.__file__))",
            ],
            cwd=installed.root,
            env=installed.env(),
        ).strip()
    )
    assert REPO not in site.parents, site
    assert [
        p for p in site.rglob("*") if p.name.startswith("test_") or p.name == "conftest.py"
    ] == []
    home = installed.root / "dsh-home"
    shutil.copytree(FIXTURE_HOMES / "cjk-emoji", home)
    port = free_port()
    log = installed.root / "serve.log"
    process = spawn(
        [installed.program("dshweb"), "serve", "--home", str(home), "--port", str(port)],
        cwd=installed.root,
        env=installed.env(),
        log=log,
    )
    try:
        _wait_for_login(port, process, log)
        # The compiled catalog came with the wheel: a Chinese browser gets a Chinese page.
        chinese = urllib.request.Request(
            f"http://127.0.0.1:{port}/accounts/login/", headers={"Accept-Language": "zh-CN"}
        )
        with urllib.request.urlopen(chinese, timeout=10) as answer:
            assert "<h1>登录</h1>" in answer.read().decode()
        said = log.read_text()
        password = re.search(r"superuser 'admin' with password '([^']+)'", said)
        assert password, said
        data = installed.user_home / ".local" / "share" / "dshweb"
        assert (data / "db.sqlite3").is_file(), sorted(installed.user_home.rglob("*"))
        context = browser.new_context(base_url=f"http://127.0.0.1:{port}")
        page = context.new_page()
        page.set_default_timeout(PAGE_MS)
        page.goto("/accounts/login/")
        page.fill("#id_username", "admin")
        page.fill("#id_password", password[1])
        page.click("#login button[type=submit]")
        page.wait_for_url(f"http://127.0.0.1:{port}/")
        rows = page.locator("#sessions li[data-session-id]")
        expect(rows).not_to_have_count(0)
        rows.first.locator("a").first.click()
        ring = page.locator("#context-ring")
        expect(ring).to_be_visible()
        assert (ring.get_attribute("data-used") or "").isdigit()
        css = page.request.get("/static/dshweb/dshweb.css")
        assert css.status == 200 and b"{" in css.body()
        context.close()
    finally:
        terminate(process)


def test_the_installed_snapshot_equals_the_checkouts(installed: Installed) -> None:
    home = FIXTURE_HOMES / "auto-compact"
    theirs = json.loads(
        _run(
            [installed.program("dshweb"), "snapshot", "--json", "--home", str(home)],
            cwd=installed.root,
            env=installed.env(),
        )
    )
    ours = run_python("manage.py", "dsh_snapshot", "--json", "--home", str(home), check=True)
    assert theirs == json.loads(ours.stdout)
    assert len(theirs) >= 1 and theirs[0]["tokenUsage"]


def test_the_team_extra_brings_postgres_and_redis(built: Built, installed: Installed) -> None:
    # (The base install has neither: the installed fixture checked that before any test.)
    team = built.pip_install(installed.venv, f"{built.wheel}[team]")
    _run(team, cwd=installed.root, env=installed.env())
    _run(
        [installed.program("python"), "-c", "import psycopg, channels_redis, dj_database_url"],
        cwd=installed.root,
        env=installed.env(),
    )


def test_doctor_says_what_it_sees(installed: Installed, tmp_path: Path) -> None:
    env = installed.env() | {"DSHWEB_DATA_DIR": str(tmp_path / "data")}

    def doctor(home: Path) -> str:
        done = subprocess.run(
            [installed.program("dshweb"), "doctor", "--home", str(home)],
            cwd=installed.root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        print(done.stdout)  # the closing notes quote it
        return done.stdout

    fixture = doctor(FIXTURE_HOMES / "told-truth")
    assert re.search(r"^ok +DSH home +\S+told-truth: 1 session$", fixture, re.M)
    assert re.search(r"^note +dsh +no dsh on PATH", fixture, re.M)
    empty = tmp_path / "empty-home"
    empty.mkdir()
    nothing = doctor(empty)
    assert re.search(r"^note +DSH home +\S+empty-home: no session logs yet", nothing, re.M)
