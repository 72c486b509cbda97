"""Shared test data: the committed fixture homes (real DSH output) and the shared corpus."""

from __future__ import annotations

import gc
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Generator, Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.support import durations, forkserver
from tests.support.bytecode import keep_bytecode
from tests.support.once import RUN_DIR, all_at_the_door, write_for_the_run
from tests.support.xdist_groups import GroupScheduling, scope_of, write_groups

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
    from dshweb.core.log.home import session_logs

    return [log.path for log in session_logs(home)]


def run_python(
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    check: bool = False,
    umask: int = -1,
) -> subprocess.CompletedProcess[str]:
    """This interpreter run on ``args`` in the checkout, in a child process (forked when it
    runs the same: tests/support/forkserver.py), its output captured as text."""
    return forkserver.run(
        [sys.executable, *args], cwd=REPO, env=env, timeout=timeout, check=check, umask=umask
    )


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's test database; on PostgreSQL, the connections other threads left
    open to it (a hub's, a worker's) are ended before it is dropped, which PostgreSQL
    refuses while anyone is connected."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """On SQLite, the test database in a file, as dshweb runs, not in shared-cache memory:
    there a reader's table lock fails a writer in another thread at once ("database table
    is locked"), where a file's writers queue for the settings' timeout."""
    from django.db import connections

    database = connections["default"].settings_dict
    if database["ENGINE"] == "django.db.backends.sqlite3":
        folder = tmp_path_factory.mktemp("database")
        database["TEST"]["NAME"] = str(folder / "test.sqlite3")


def pytest_report_header(config: pytest.Config) -> str:
    """The DSH runtime the tests run (pyproject.toml's ``engine`` extra is a range)."""
    try:
        return f"DSH runtime: deepseek-harness-sdk {metadata.version('deepseek-harness-sdk')}"
    except metadata.PackageNotFoundError:
        return "DSH runtime: not installed (the tests marked dsh fail)"


def pytest_configure(config: pytest.Config) -> None:
    """The tests' own data folder, made before any test module is imported (one imports
    the ASGI app, whose WhiteNoise looks for STATIC_ROOT at once); no demo home and no
    fold checkpoints unless a test asks; passwords hashed by a fast hasher in this
    process (a test makes and signs in users by the hundred), as in the servers the tests
    start (tests/support/child_settings.py). Tests change ``DSHWEB`` with the ``settings``
    fixture: ``settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home}``."""
    from django.conf import settings
    from django.test import override_settings

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # Started in the background by a shell (``scripts/test &``, ``nohup``): SIGINT
        # came ignored, and every process the tests start would inherit that. The servers
        # the tests stop with SIGINT (Ctrl-C) would then never hear it, as in no terminal.
        signal.signal(signal.SIGINT, signal.default_int_handler)

    data = Path(tempfile.mkdtemp(prefix="dshweb-tests-"))
    (data / "staticfiles").mkdir()
    override = override_settings(
        STATIC_ROOT=data / "staticfiles",
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        DSHWEB={**settings.DSHWEB, "DATA_DIR": data, "DEMO": False, "FOLD_CHECKPOINTS": False},
    )
    override.enable()
    config.stash[_DATA_DIR] = data
    if RUN_DIR not in os.environ:
        # The process pytest started: a folder for what the whole run makes once
        # (tests/support/once.py), which its test workers inherit (scripts/test names one
        # for each of its passes).
        run = Path(tempfile.mkdtemp(prefix="dshweb-tests-run-"))
        os.environ[RUN_DIR] = str(run)
        config.stash[_RUN] = run
    if "PYTEST_XDIST_WORKER" not in os.environ:
        # The process pytest started: the order of the runs before for its test processes,
        # and this run's figures for the next (not a coverage run's: its tracer slows
        # some tests far more than others).
        durations.share_with_the_run()
        if not config.getoption("cov_source", None):
            config.pluginmanager.register(durations.Recorder(), "dshweb-test-durations")
    if keep_bytecode(os.environ, Path(os.environ[RUN_DIR]) / "pycache"):
        # The tests start hundreds of Python processes (servers, collectors, manage.py),
        # each compiling everything it imports afresh when no bytecode may be written:
        # their bytecode is kept in the run's folder instead (tests/support/bytecode.py),
        # for the test workers and every child. This process keeps there too the test
        # modules pytest rewrites as it collects (:func:`pytest_collection`).
        sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
        sys.dont_write_bytecode = False
    # The Python processes of dshweb the tests start are forked from a process that has
    # imported their libraries once (tests/support/forkserver.py): about 0.7 s of CPU
    # saved a start. DSHWEB_TEST_FORK=0 starts each afresh.
    os.environ.setdefault(forkserver.SWITCH, "1")


def pytest_unconfigure(config: pytest.Config) -> None:
    for key in (_DATA_DIR, _RUN):
        if (folder := config.stash.get(key, None)) is not None:
            shutil.rmtree(folder, ignore_errors=True)


_DATA_DIR = pytest.StashKey[Path]()
_RUN = pytest.StashKey[Path]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--timing-tests",
        choices=("all", "only", "skip"),
        default="all",
        help="run the tests marked timing too (all), only them (only) or not (skip): "
        "scripts/test runs them after the others, two at a time",
    )


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Each test process of pytest-xdist first imports its share of the test modules
    (every n-th of them, n the number of processes), then waits for the others' shares
    (:func:`~tests.support.once.all_at_the_door`), then collects. pytest rewrites the
    asserts of every test module it imports and keeps the result as bytecode (Python too
    what they import): on a fresh checkout about 8 s of CPU for the whole suite, 2.6 s
    once kept. Shared out, that is done once across the processes and on every core;
    without it every process did it all at once, on a machine of fewer cores than
    processes."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None or RUN_DIR not in os.environ:
        return (yield)
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(worker.removeprefix("gw"))
    for name in _test_modules(session.config)[index::count]:
        try:
            importlib.import_module(name)
        except KeyboardInterrupt:
            raise
        except BaseException:  # its collection says why, in its own words
            continue
    all_at_the_door(f"warmed-{count}", worker, count)
    return (yield)


def _test_modules(config: pytest.Config) -> list[str]:
    """The dotted names of the test modules the arguments name, where every folder from
    the checkout down is a package (pytest's name for them, as it imports them)."""
    found: set[Path] = set()
    for argument in config.args:
        path = (config.invocation_params.dir / argument.split("::", 1)[0]).resolve()
        if path.is_dir():
            found.update(path.rglob("test_*.py"))
        elif path.name.startswith("test_") and path.suffix == ".py":
            found.add(path)
    names = []
    for path in sorted(found):
        try:
            parts = path.relative_to(REPO).with_suffix("").parts
        except ValueError:
            continue
        if all(
            (REPO.joinpath(*parts[:depth]) / "__init__.py").is_file()
            for depth in range(1, len(parts))
        ):
            names.append(".".join(parts))
    return names


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test using a module-scoped fixture of its own module goes in that module's
    ``xdist_group``. A group runs in one test process with ``--dist loadgroup``
    (scripts/test), so what such a fixture starts (a server, a real ``dsh web``, a home
    folded) is made once, not once per process a test of the module happens to land in."""
    module = _group_module(item)
    if module is not None and item.get_closest_marker("xdist_group") is None:
        item.add_marker(pytest.mark.xdist_group(module))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (Django, dshweb, the test modules) is set aside from the
    garbage collector, and the youngest generation is collected after 50,000 allocations,
    not 700: the fold's tests allocate millions of small records. On ``tests/core/fold``
    and ``tests/core/log`` in one process, the collector's time went from 7.8 s of about
    100 s of CPU to 4.0 s. A test that needs a collection (a leak, a weak reference) asks
    for it with ``gc.collect()``."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests ``--timing-tests`` selects; the longest units of work first, by the runs
    before (tests/support/durations.py; without their figures, or between equals, the
    groups of :func:`pytest_itemcollected` first), so that they do not end the run; the
    browser tests last:
    pytest-playwright's sync API keeps an event loop running in the main thread from its
    first use to the end of the session, and there Django refuses its sync-only calls (the
    ORM) and asyncio refuses ``asyncio.run`` (with loadgroup, ``--no-loadscope-reorder``
    keeps this order)."""
    which = config.getoption("--timing-tests")
    if which != "all":
        timed = {item: item.get_closest_marker("timing") is not None for item in items}
        if which == "skip":
            _write_timing_files([item for item, is_timed in timed.items() if is_timed])
        config.hook.pytest_deselected(
            items=[item for item in items if timed[item] != (which == "only")]
        )
        items[:] = [item for item in items if timed[item] == (which == "only")]

    def browser(item: pytest.Item) -> bool:
        return item.get_closest_marker("browser") is not None

    items.sort(key=lambda i: (browser(i), i.get_closest_marker("xdist_group") is None))
    durations.sort_longest_first(items, scope_of, last=browser)  # ties keep that order
    write_groups(items)


TIMING_FILES = "timing-files"
"""In the run's folder: the test files that hold a timing test, one a line, which
scripts/test's second pass collects instead of the whole suite (when it was given no
test of its own to run)."""


def _write_timing_files(timed: list[pytest.Item]) -> None:
    if RUN_DIR in os.environ:
        files = sorted({item.nodeid.split("::", 1)[0] for item in timed})
        write_for_the_run(TIMING_FILES, "".join(f"{file}\n" for file in files))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> GroupScheduling | None:
    """``--dist loadgroup`` (scripts/test): tests/support/xdist_groups.py."""
    return GroupScheduling(config, log) if config.getvalue("dist") == "loadgroup" else None


def _group_module(item: pytest.Item) -> str | None:
    """The node id of ``item``'s module when the test uses a module-scoped fixture the
    module defines (not one of a ``conftest.py``, which many modules share)."""
    if not isinstance(item, pytest.Function):
        return None
    module = item.nodeid.split("::", 1)[0]
    for name in item.fixturenames:
        definitions = item._fixtureinfo.name2fixturedefs.get(name) or ()
        if any(d.scope == "module" and d.baseid == module for d in definitions[-1:]):
            return module
    return None


@pytest.fixture
def fresh_hub() -> Iterator[None]:
    """No hub before the test or after it: the test's pages read its own home afresh."""
    from dshweb.live.service import stop_hub

    stop_hub()
    yield
    stop_hub()


@pytest.fixture
def static_root(tmp_path: Path, settings: Any) -> Path:
    """An empty ``STATIC_ROOT`` of the test's own: WhiteNoise warns (an error here) when
    it does not exist before collectstatic."""
    settings.STATIC_ROOT = tmp_path / "staticfiles"
    settings.STATIC_ROOT.mkdir()
    return Path(settings.STATIC_ROOT)


@pytest.fixture(scope="session", autouse=True)
def _hub_for_tests() -> None:
    """Pages wait for the hub's first round however slow the machine (the progress tests
    set their own wait)."""
    from dshweb.live import timing

    timing.FIRST_PAGE_WAIT = 60.0


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """Each test starts in the default language: Django's LocaleMiddleware leaves the
    language of a request's page active in its thread (a test that asked for a page in
    Chinese would leave the next test's words in Chinese)."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()
