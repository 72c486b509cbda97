"""A real dshweb server for the tests: :class:`~tests.support.child_server.ChildServer` (Daphne
in a child process on 127.0.0.1, shared with ``bench/``) with a database of its own on a
PostgreSQL run, prepared the way a person would: ``manage.py dshweb_bootstrap``, then a
superuser made by ``manage.py createsuperuser --noinput``. A fixture yields from
:func:`serving` to run one; :func:`sign_in` signs in through its login form in a browser.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, StorageState

from dshweb.secret_key import create_secret_key
from tests.support.child_server import (
    HOST,
    REPO,
    ChildServer,
    Process,
    ServerError,
    free_port,
    spawn,
    terminate,
)
from tests.support.once import made_once
from tests.support.stores import database_env

__all__ = [
    "HOST",
    "PASSWORD",
    "USERNAME",
    "DemoServer",
    "DshwebServer",
    "Process",
    "ServerError",
    "free_port",
    "serving",
    "sign_in",
    "spawn",
    "terminate",
]

CHILD_SETTINGS = "tests.support.child_settings"
USERNAME = "tester"
PASSWORD = "browser-tests-only-7Qm2"
SIGN_IN_MS = 10_000


@dataclass(slots=True)
class DshwebServer(ChildServer):
    def env(self) -> dict[str, str]:
        # A database of its own on a PostgreSQL run, unless extra_env names one (shared stores);
        # passwords hashed fast (tests/support/child_settings.py) when it runs this checkout.
        fast = {"DJANGO_SETTINGS_MODULE": CHILD_SETTINGS} if self.tree == REPO else {}
        return ChildServer.env(self) | fast | database_env(self.data_dir) | self.extra_env

    def prepare(self) -> None:
        """Prepare the data folder as ``scripts/start`` does, and the user the tests sign in
        as. On SQLite, a copy of the database one preparation of this test process made
        (the same migrations and users: ~5 s of two ``manage.py`` runs saved a server),
        with a secret key of its own; on PostgreSQL, or over a database, every time."""
        if "DATABASE_URL" in self.env() or (self.data_dir / "db.sqlite3").exists():
            self._prepare_here()
            return
        template = _prepared(self.tree)
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in ("db.sqlite3", "staticfiles"):
            if (template / name).is_dir():
                shutil.copytree(template / name, self.data_dir / name, dirs_exist_ok=True)
            else:
                shutil.copy2(template / name, self.data_dir / name)
        create_secret_key(self.data_dir / "secret_key")

    def _prepare_here(self) -> None:
        self.manage("dshweb_bootstrap", "--verbosity", "0")
        env = self.env() | {
            "DJANGO_SUPERUSER_USERNAME": USERNAME,
            "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
            "DJANGO_SUPERUSER_EMAIL": "tester@example.invalid",
        }
        self.manage("createsuperuser", "--noinput", env=env)


@dataclass  # not slots: a slotted subclass breaks super() in its methods
class DemoServer(DshwebServer):
    """dshweb as a new user starts it: its ``home`` (a DSH home) does not exist, so it shows
    the demo home, with its replay, its Compact and the administrator's demo rule."""

    def env(self) -> dict[str, str]:
        env = super().env()
        for name in ("DSHWEB_NO_DEMO", "DSHWEB_PROFILE"):
            env.pop(name, None)
        return env


def _prepared(tree: Path) -> Path:
    """A data folder prepared from ``tree``, made once in the run (tests/support/once.py)."""
    key = hashlib.sha256(str(tree).encode()).hexdigest()[:12]

    def prepare(folder: Path) -> None:
        DshwebServer(home=folder / "no-home", data_dir=folder / "data", tree=tree)._prepare_here()

    return made_once(f"prepared-server-{key}", prepare) / "data"


def serving(server: DshwebServer) -> Iterator[DshwebServer]:
    """Prepare and start ``server`` for a fixture (its output on failure), then stop it."""
    try:
        server.prepare()
        server.start()
    except ServerError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        yield server
    finally:  # also when the test fails inside ``contextmanager(serving)``
        server.stop()


def sign_in(browser: Browser, server: DshwebServer) -> StorageState:
    """Sign in as ``USERNAME`` through ``server``'s login form; the cookies it set."""
    context = browser.new_context(base_url=server.url)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("#login button[type=submit]")
    page.wait_for_url(f"{server.url}/", timeout=SIGN_IN_MS)
    assert page.locator("#sessions").count() == 1, page.content()[:500]
    state = context.storage_state()
    context.close()
    return state
