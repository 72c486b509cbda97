"""A setting dshweb cannot use, against the real ``dshweb serve`` and ``dshweb doctor``
(issue 47, items 6 and 7): one line on standard error naming the setting, exit status 2,
never a traceback, never a hang, never a server; ``doctor`` shows the same as a problem
row and exits 1, as for any problem. The commands run in child processes of this
checkout, and one that serves or hangs fails at :data:`TIMEOUT`. ``serve`` runs once per
case; ``doctor``, which lists every problem it finds, once per data folder or set of
settings holding several cases (about a second each, most of it Django's imports).

The data folder's own files are tried the same way, each path dshweb opens there (the
key, the database and its journals, the static files, the demo home, the folder itself)
with each kind of hostile file: a FIFO, a device, a link to an endless file, a huge file,
an unreadable one, a folder where a file belongs and the reverse, another user's, one
others can write. Another user's data folder is refused by every door into dshweb:
``dshweb serve``, ``manage.py``, Daphne on ``dshweb.asgi``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support import forkserver
from tests.support.unprivileged import without_reading_rights

TIMEOUT = 20.0
"""A refusal takes a fraction of a second (the settings are read before Django is imported),
``doctor`` a second or two; a command past this served or hung."""
OTHER_UID = 65534  # nobody


@dataclass(frozen=True, slots=True)
class Ran:
    argv: list[str]
    code: int | None  # None: still running at the deadline (killed)
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (
            f"{' '.join(self.argv[-3:])} exited {self.code}\n--- stdout\n{self.stdout[-2500:]}"
            f"--- stderr\n{self.stderr[-2500:]}"
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A clean environment: a data folder and a DSH home of the test's own, no demo."""
    (tmp_path / "home" / "sessions").mkdir(parents=True, exist_ok=True)
    (tmp_path / "user").mkdir(exist_ok=True)
    prefixes = ("DSHWEB_", "DJANGO_", "DSH_", "DATABASE_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    return env | {
        "HOME": str(tmp_path / "user"),
        "DSHWEB_DATA_DIR": str(tmp_path / "data"),
        "DSH_HOME": str(tmp_path / "home"),
        "DSHWEB_NO_DEMO": "1",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def _run_all(commands: list[list[str]], env: dict[str, str], timeout: float) -> list[Ran]:
    """Run ``commands`` at once in this checkout; each is killed (with its children) at
    the deadline."""
    started = [
        forkserver.popen(
            argv,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        for argv in commands
    ]
    deadline = time.monotonic() + timeout
    ran = []
    for argv, process in zip(commands, started, strict=True):
        try:
            out, err = process.communicate(timeout=max(0.1, deadline - time.monotonic()))
            code: int | None = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            code = None
        ran.append(Ran(argv, code, forkserver.as_text(out), forkserver.as_text(err)))
    return ran


def _dshweb(*args: str) -> list[str]:
    return [sys.executable, "-m", "dshweb", *args]


def _serve() -> list[str]:
    return _dshweb("serve", "--port", str(_free_port()))


def _wrapper(unprivileged: bool) -> Callable[[list[str]], list[str]]:
    """A command as it runs: without the reading rights root has (``unprivileged``), or
    as it is."""
    return without_reading_rights if unprivileged else (lambda argv: argv)


def serve_and_doctor(
    env: dict[str, str], *, timeout: float = TIMEOUT, unprivileged: bool = False
) -> tuple[Ran, Ran]:
    wrap = _wrapper(unprivileged)
    serve, doctor = _run_all(
        [wrap(_serve()), wrap(_dshweb("doctor"))],
        env,
        timeout,
    )
    return serve, doctor


def assert_refused(ran: Ran, setting: str, says: str) -> None:
    """Exit 2 with one line on standard error, ``dshweb: SETTING: …says…``."""
    assert ran.code == 2, ran
    assert "Traceback" not in ran.stderr + ran.stdout, ran
    lines = ran.stderr.splitlines()
    assert len(lines) == 1, ran
    assert lines[0].startswith(f"dshweb: {setting}: "), ran
    assert says in lines[0], ran


def assert_problem_row(ran: Ran, part: str, says: str) -> None:
    """Doctor's findings, with a problem row ``part`` saying ``says``; exit 1."""
    assert ran.code == 1, ran
    assert "Traceback" not in ran.stderr + ran.stdout, ran
    rows = [
        line for line in ran.stdout.splitlines() if re.match(rf"problem +{re.escape(part)}  ", line)
    ]
    assert any(says in row for row in rows), ran
    assert re.search(r"^\w+ +engine  ", ran.stdout, re.M), ran  # it went on to the last row
    assert re.fullmatch(r"CommandError: \d+ problem\(s\) found\n", ran.stderr), ran


# -- every setting of the environment --------------------------------------------------------


BAD_SETTINGS = [
    # (variable, value, what the line and the row say)
    ("DATABASE_URL", "mysql://root@127.0.0.1/dshweb", "this one has scheme 'mysql'"),
    ("DATABASE_URL", "postgres://u@127.0.0.1:port/db", "not a URL dshweb can read"),
    ("DATABASE_URL", "postgres://u@[::1/db", "not a URL dshweb can read (Invalid IPv6 URL)"),
    ("DSHWEB_REDIS_URL", "http://127.0.0.1:6379", "write it as redis://host:port/db"),
    ("DSHWEB_REDIS_URL", "redis://127.0.0.1:port/0", "not a URL dshweb can read"),
    ("DSHWEB_REDIS_URL", "redis://127.0.0.1:6379/first", "the database 'first' is not a number"),
    ("DSHWEB_PRICE_AS", "deepseek-flash=deepseek-v9", "'deepseek-v9' is not in the dsh-llm-cost"),
    ("DSHWEB_PRICE_AS", "deepseek-flash", "'deepseek-flash' is not model=registry-model"),
    ("DSHWEB_PEAK_WINDOWS", "1-4", "'1-4' is not HH:MM-HH:MM"),
    ("DSHWEB_PEAK_WINDOWS", "01:00-04:10", "times are quarter hours"),
    ("DSHWEB_TRUSTED_PROXIES", "proxy.internal", "'proxy.internal' is not an IP address"),
    ("DSHWEB_TRUSTED_ORIGINS", "dsh.example.com", "'dsh.example.com' is not an origin"),
    ("DSHWEB_BEHIND_TLS_PROXY", "yes", "'yes' is neither 1 (on) nor 0 (off)"),
    ("DSHWEB_HSTS_SECONDS", "1y", "'1y' is not a whole number of seconds"),
    ("DSHWEB_COLLECT", "maybe", "'maybe' is neither on"),
    ("DSHWEB_HOME_NAME", "my home", "'my home' is not a home name"),
    ("DSHWEB_FOLD_CHECKPOINTS", "yes", "'yes' is neither 1 (on) nor 0 (off)"),
    ("DSHWEB_WEBHOOK_RULES_PER_USER", "ten", "'ten' is not a whole number of rules"),
    ("DSHWEB_FOLD_PROCESSES", "all", "'all' is not a whole number of processes"),
    ("DSHWEB_NO_DEMO", "true", "'true' is neither 1 (on) nor 0 (off)"),
    ("DSHWEB_DEBUG", "true", "'true' is neither 1 (on) nor 0 (off)"),
    ("DSHWEB_ENGINE", "manged", "'manged' is not managed"),
    ("DSHWEB_ENGINE_URL", "http://10.1.2.3:9/?token=t", "host must be loopback"),
    ("DSHWEB_ENGINE_URL", "127.0.0.1:9", "must start with http://"),
    ("DSHWEB_PUBLIC_URL", "dsh.example.com", "'dsh.example.com' is not a web address"),
    ("DSHWEB_METRICS_TOKEN", "two words", "holds a space"),
    ("DSHWEB_TIME_ZONE", "Mars/Olympus", "'Mars/Olympus' is not a time zone"),
    ("DSHWEB_ALLOWED_HOSTS", "https://dsh.example.com", "is a web address, not a host"),
    ("DSHWEB_ALLOWED_HOSTS", "dsh.example.com:8000", "has a port"),
    ("DSHWEB_ALLOWED_HOSTS", "::1", "write [::1]"),
    ("DSHWEB_WEBHOOK_ALLOWED_HOSTS", "http://relay.internal/hook", "is a web address"),
    ("DSHWEB_MAIL_ALLOWED_DOMAINS", "ops@example.com", "is an address: write its domain"),
    ("DSHWEB_EMAIL_HOST", "smtp://mail.example.com", "is a web address, not a host"),
    ("DSHWEB_EMAIL_PORT", "smtp", "'smtp' is not a port (1 to 65535)"),
    ("DSHWEB_EMAIL_PORT", "70000", "'70000' is not a port (1 to 65535)"),
    ("DSHWEB_EMAIL_TLS", "yes", "'yes' is neither 1 (on) nor 0 (off)"),
    ("DSHWEB_EMAIL_FROM", "not an address", "'not an address' is not a mail address"),
    ("DSHWEB_SECRET_KEY", "   ", "holds only spaces"),
    ("DSHWEB_PROFILE", "../../etc", "'../../etc' is not a profile name"),
    ("DSH_HOME", "/etc/passwd", "/etc/passwd is not a folder"),
]


@pytest.mark.parametrize(
    ("setting", "value", "says"),
    BAD_SETTINGS,
    ids=[f"{name}={value}" for name, value, _ in BAD_SETTINGS],
)
def test_a_bad_setting_is_one_line(tmp_path: Path, setting: str, value: str, says: str) -> None:
    (serve,) = _run_all([_serve()], _env(tmp_path, **{setting: value}), TIMEOUT)
    assert_refused(serve, setting, says)
    assert not (tmp_path / "data").exists()  # refused before anything was prepared


def test_every_bad_setting_at_once_is_one_line_and_one_row_each(tmp_path: Path) -> None:
    """Each bad setting is a line of ``serve`` (as alone, above) and a problem row of
    ``doctor``, which lists every problem: one run of each checks them all (the issue's
    own among them: a price alias, a peak window, a malformed or non-PostgreSQL
    DATABASE_URL)."""
    given = {name: (value, says) for name, value, says in BAD_SETTINGS}
    serve, doctor = serve_and_doctor(_env(tmp_path, **{k: v for k, (v, _) in given.items()}))
    assert serve.code == 2 and "Traceback" not in serve.stderr, serve
    lines = serve.stderr.splitlines()
    assert len(lines) == len(given), serve
    for line, (name, (_, says)) in zip(sorted(lines), sorted(given.items()), strict=True):
        assert line.startswith(f"dshweb: {name}: ") and says in line, (line, name, says)
    problems = len(given) + 1  # and the DSH home the doctor finds not to be a folder
    assert doctor.stderr == f"CommandError: {problems} problem(s) found\n", doctor
    for name, (_, says) in given.items():
        assert_problem_row(doctor, name, says)


def test_a_price_alias_and_a_peak_window_name_the_variable_not_the_dict(tmp_path: Path) -> None:
    # f4ab7dd: DSHWEB['PRICE_AS'] in a 33-line traceback of ImproperlyConfigured.
    (serve,) = _run_all([_serve()], _env(tmp_path, DSHWEB_PRICE_AS="x=deepseek-v9"), TIMEOUT)
    assert serve.stderr == (
        "dshweb: DSHWEB_PRICE_AS: 'deepseek-v9' is not in the dsh-llm-cost registry\n"
    )


@pytest.mark.parametrize(
    ("args", "setting", "says"),
    [
        (["--port", "abc"], "--port", "'abc' is not a port"),
        (["--port", "70000"], "--port", "'70000' is not a port"),
        (["--host", "999.1.1.1"], "--host", "'999.1.1.1' is not an address of this machine"),
        (["--host", "192.0.2.1"], "--host", "'192.0.2.1' is not an address of this machine"),
        (["--home", "/etc/passwd"], "--home", "/etc/passwd is not a folder"),
        (["--price-as", "deepseek-flash=gpt-9"], "--price-as", "'gpt-9' is not in the dsh-llm"),
    ],
)
def test_an_option_serve_cannot_use_is_one_line(
    tmp_path: Path, args: list[str], setting: str, says: str
) -> None:
    (ran,) = _run_all([_dshweb("serve", *args)], _env(tmp_path), TIMEOUT)
    assert_refused(ran, setting, says)


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (ran,) = _run_all([_dshweb("serve", "--port", str(port))], _env(tmp_path), TIMEOUT)
    assert_refused(ran, "--port", f"127.0.0.1:{port} is in use")


@pytest.mark.parametrize("value", ["abc", "0", "70000"])
def test_scripts_start_refuses_a_port_that_is_none(tmp_path: Path, value: str) -> None:
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "start")],
        env=_env(tmp_path, DSHWEB_PORT=value),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2, done
    assert done.stderr == f"dshweb: DSHWEB_PORT: '{value}' is not a port (1 to 65535)\n"


def _imported_and_said(ran: Ran) -> tuple[list[str], list[str]]:
    """The modules ``python -X importtime`` saw imported, and the other lines of stderr."""
    stamped = [line for line in ran.stderr.splitlines() if line.startswith("import time:")]
    said = [line for line in ran.stderr.splitlines() if not line.startswith("import time:")]
    return [line.rsplit("|", 1)[-1].strip() for line in stamped], said


def test_a_refusal_comes_before_django_is_imported(tmp_path: Path) -> None:
    """Issue 41: the settings and the data folder are read before Django, Channels and
    Daphne are imported (a refusal takes a fraction of a second, not the second they take)."""
    importtime = [sys.executable, "-X", "importtime", "-m", "dshweb", "serve"]
    (setting,) = _run_all([importtime], _env(tmp_path, DSHWEB_HOME_NAME="my home"), TIMEOUT)
    (tmp_path / "data").mkdir(mode=0o700)
    _fifo(tmp_path / "data" / "secret_key")
    (folder,) = _run_all([importtime], _env(tmp_path), TIMEOUT)
    for ran, says in [
        (setting, "dshweb: DSHWEB_HOME_NAME: 'my home' is not a home name"),
        (folder, f"dshweb: DSHWEB_DATA_DIR: {tmp_path / 'data' / 'secret_key'} is a FIFO"),
    ]:
        assert ran.code == 2, ran
        imported, said = _imported_and_said(ran)
        # What the settings read with (dshweb.settings itself, refused, is never done).
        assert "dshweb.environment" in imported and "dshweb.private_data" in imported, ran
        frameworks = [m for m in imported if m.split(".")[0] in ("django", "channels", "daphne")]
        assert frameworks == [], ran
        assert len(said) == 1 and said[0].startswith(says), ran


def test_doctor_starts_without_twisted(tmp_path: Path) -> None:
    """Issue 41: Django's commands start without Daphne's Twisted reactor (about 0.2 s of
    imports each); only ``serve`` imports it, to serve."""
    importtime = [sys.executable, "-X", "importtime", "-m", "dshweb", "doctor"]
    (ran,) = _run_all([importtime], _env(tmp_path), TIMEOUT)
    assert ran.code == 0, ran
    imported, _ = _imported_and_said(ran)
    assert "django.core.management" in imported, ran
    assert [m for m in imported if m.split(".")[0] in ("daphne", "twisted")] == [], ran


# -- a database that never answers -----------------------------------------------------------


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never says a word."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        yield int(silent.getsockname()[1])


def test_a_database_that_never_answers_ends_serve_and_doctor_in_seconds(
    tmp_path: Path, silent_listener: int
) -> None:
    # f4ab7dd: both wait for ever (no connect timeout; doctor connects twice).
    pytest.importorskip("psycopg")
    url = f"postgres://dshweb@127.0.0.1:{silent_listener}/dshweb"
    serve, doctor = serve_and_doctor(_env(tmp_path, DATABASE_URL=url))  # killed at TIMEOUT
    assert_refused(serve, "DATABASE_URL", "the database cannot be used")
    assert "connection timeout expired" in serve.stderr
    assert_problem_row(doctor, "database", "PostgreSQL (DATABASE_URL) cannot be reached")


# -- the data folder and its files (item 7, and item 1 for the data folder's files) ----------


def _fifo(path: Path) -> None:
    os.mkfifo(path, 0o600)


def _device(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can make a device node")
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers


def _endless_link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    with path.open("wb") as out:
        out.truncate(2 << 30)  # 2 GiB of zeros, sparse: no disk used
    path.chmod(0o600)


def _unreadable_file(path: Path) -> None:
    path.write_text("x" * 60)
    path.chmod(0)


def _unreadable_folder(path: Path) -> None:
    path.mkdir()
    path.chmod(0)


def _folder(path: Path) -> None:
    path.mkdir(mode=0o700)


def _file(path: Path) -> None:
    path.write_text("x")
    path.chmod(0o600)


def _another_users(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a file another user owns needs root (chown)")
    if not path.exists():
        _file(path)
    os.chown(path, OTHER_UID, OTHER_UID)


def _writable_by_others(path: Path) -> None:
    if not path.exists():
        _file(path)
    path.chmod(0o777 if path.is_dir() else 0o666)


KINDS: dict[str, Callable[[Path], None]] = {
    "FIFO": _fifo,
    "device": _device,
    "endless link": _endless_link,
    "huge": _huge,
    "unreadable file": _unreadable_file,
    "unreadable folder": _unreadable_folder,
    "folder": _folder,
    "file": _file,
    "another user's": _another_users,
    "writable by others": _writable_by_others,
}
FILE_CASES = {
    "secret_key": {
        "FIFO": "is a FIFO (named pipe), not a regular file",
        "device": "is a character device, not a regular file",
        "endless link": "is a symbolic link: dshweb follows no link in its data folder",
        "huge": "is 2 GiB; dshweb reads at most 4 KiB",
        "unreadable file": "is not open to you, its owner (mode 0000)",
        "folder": "is a folder, not a regular file",
        "another user's": "is owned by nobody (uid 65534), not by you",
        "writable by others": "is writable by others (mode 0666)",
    },
    "db.sqlite3": {
        "FIFO": "is a FIFO (named pipe), not a regular file",
        "device": "is a character device, not a regular file",
        "endless link": "is a symbolic link",
        "huge": "cannot be used as dshweb's database: file is not a database",
        "unreadable file": "is not open to you, its owner (mode 0000)",
        "folder": "is a folder, not a regular file",
        "another user's": "is owned by nobody (uid 65534), not by you",
        "writable by others": "is writable by others (mode 0666)",
    },
    "db.sqlite3-journal": {
        "FIFO": "is a FIFO (named pipe), not a regular file",
        "device": "is a character device, not a regular file",
        "endless link": "is a symbolic link",
        "another user's": "is owned by nobody (uid 65534), not by you",
    },
    "db.sqlite3-wal": {
        "FIFO": "is a FIFO (named pipe), not a regular file",
        "endless link": "is a symbolic link",
        "another user's": "is owned by nobody (uid 65534), not by you",
    },
    "db.sqlite3-shm": {"FIFO": "is a FIFO (named pipe), not a regular file"},
    "staticfiles": {
        "FIFO": "is a FIFO (named pipe), not a folder",
        "device": "is a character device, not a folder",
        "endless link": "is a symbolic link",
        "file": "is a regular file, not a folder",
        "unreadable folder": "is not open to you, its owner (mode 0000)",
        "another user's": "is owned by nobody (uid 65534), not by you",
        "writable by others": "is writable by others (mode 0777)",
    },
    "demo-home": {
        "FIFO": "is a FIFO (named pipe), not a folder",
        "endless link": "is a symbolic link",
        "another user's": "is owned by nobody (uid 65534), not by you",
    },
}
CASES = [(name, kind, says) for name, kinds in FILE_CASES.items() for kind, says in kinds.items()]


def _make_hostile(data: Path, name: str, kind: str) -> None:
    if name in ("staticfiles", "demo-home") and kind in ("another user's", "writable by others"):
        _folder(data / name)
    KINDS[kind](data / name)


@pytest.mark.parametrize(("name", "kind", "says"), CASES, ids=[f"{n}-{k}" for n, k, _ in CASES])
def test_a_hostile_file_in_the_data_folder_is_refused_by_name(
    tmp_path: Path, name: str, kind: str, says: str
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    _make_hostile(data, name, kind)
    wrap = _wrapper(kind.startswith("unreadable"))
    (serve,) = _run_all([wrap(_serve())], _env(tmp_path), TIMEOUT)
    assert_refused(serve, "DSHWEB_DATA_DIR", f"{data / name} {says}")


def _doctor_rounds() -> list[list[tuple[str, str, str]]]:
    """The cases of :data:`CASES` in as few data folders as can hold them: each folder has
    at most one hostile kind of each name, those that need the reading rights taken away
    apart from the others, and the two huge files in a folder of their own: each is a
    regular file of the user's, found out only by reading it, which the doctor does
    only when nothing else in the folder is refused (the key, then its database, whose
    row says what SQLite said). The doctor lists every problem of the folder as a row of
    its own, so one run checks each case of a folder."""
    alone = [(name, "huge", FILE_CASES[name]["huge"]) for name in ("secret_key", "db.sqlite3")]
    unreadable = [case for case in CASES if case[1].startswith("unreadable")]
    rest: dict[str, list[tuple[str, str, str]]] = {}
    for case in CASES:
        if case not in alone and case not in unreadable:
            rest.setdefault(case[0], []).append(case)
    depth = max(len(cases) for cases in rest.values())
    rounds = [[cases[i] for cases in rest.values() if i < len(cases)] for i in range(depth)]
    return [alone, unreadable, *rounds]


DOCTOR_ROUNDS = _doctor_rounds()


@pytest.mark.parametrize(
    "cases",
    DOCTOR_ROUNDS,
    ids=[", ".join(f"{n}-{k}" for n, k, _ in cases) for cases in DOCTOR_ROUNDS],
)
def test_the_doctor_shows_each_hostile_file_as_a_problem_row(
    tmp_path: Path, cases: list[tuple[str, str, str]]
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    made = []
    for name, kind, says in cases:
        if kind in ("device", "another user's") and os.geteuid() != 0:
            continue  # only root makes these (the serve test above says it skipped)
        _make_hostile(data, name, kind)
        made.append((name, kind, says))
    if not made:
        pytest.skip("every case of this folder needs root")
    wrap = _wrapper(any(kind.startswith("unreadable") for _, kind, _ in made))
    (doctor,) = _run_all([wrap(_dshweb("doctor"))], _env(tmp_path), TIMEOUT)
    in_the_folder = 0
    for name, kind, says in made:
        if (name, kind) == ("db.sqlite3", "huge"):  # a regular file of the user's: SQLite's say
            assert_problem_row(doctor, "database", f"{data / name} cannot be reached: file is not")
        else:
            assert_problem_row(doctor, "data folder", f"{data / name} {says}")
            in_the_folder += 1
    rows = re.findall(r"^problem +data folder  ", doctor.stdout, re.M)
    assert len(rows) == in_the_folder


FOLDER_CASES = {
    "another user's": "is owned by nobody (uid 65534), not by you",
    "writable by others": "is writable by others (mode 0777)",
    "shared sticky": "is writable by others (mode 1777)",
    "unreadable": "is not open to you, its owner (mode 0000)",
    "FIFO": "is a FIFO (named pipe), not a folder",
    "file": "is a regular file, not a folder",
    "device": "is a character device, not a folder",
    "endless link": "is a character device, not a folder",  # a linked folder is followed
}


@pytest.mark.parametrize(("kind", "says"), FOLDER_CASES.items(), ids=list(FOLDER_CASES))
def test_a_data_folder_dshweb_cannot_trust_is_refused(tmp_path: Path, kind: str, says: str) -> None:
    data = tmp_path / "data"
    if kind == "shared sticky":
        data.mkdir()
        data.chmod(0o1777)
    elif kind in ("another user's", "writable by others"):
        data.mkdir(mode=0o700)
        KINDS[kind](data)
    elif kind == "unreadable":
        _unreadable_folder(data)
    else:
        KINDS[kind](data)
    serve, doctor = serve_and_doctor(_env(tmp_path), unprivileged=kind == "unreadable")
    assert_refused(serve, "DSHWEB_DATA_DIR", f"{data} {says}")
    assert_problem_row(doctor, "data folder", f"{data} {says}")


def _bootstrapped(tmp_path: Path) -> Path:
    """A data folder prepared by bootstrap (key, database, first admin)."""
    done = subprocess.run(
        [sys.executable, "manage.py", "dshweb_bootstrap"],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path / "data"


def test_another_users_data_folder_is_refused_by_every_door(tmp_path: Path) -> None:
    """Item 7: another user made the data folder (or replaced its database) and signed in
    to the dashboard as a superuser; f4ab7dd warned and served their database."""
    if os.geteuid() != 0:
        pytest.skip("making a folder another user owns needs root (chown)")
    data = _bootstrapped(tmp_path)
    for path in (data, *data.rglob("*")):
        os.chown(path, OTHER_UID, OTHER_UID, follow_symlinks=False)
    env = _env(tmp_path)
    port = _free_port()
    serve, doctor, migrate, manage_doctor, daphne = _run_all(
        [
            _dshweb("serve", "--port", str(port)),
            _dshweb("doctor"),
            [sys.executable, "manage.py", "migrate", "--noinput"],  # scripts/start's checkout
            [sys.executable, "manage.py", "dshweb_doctor"],
            [sys.executable, "-m", "daphne", "-p", str(_free_port()), "dshweb.asgi:application"],
        ],
        env,
        TIMEOUT,
    )
    says = f"{data} is owned by nobody (uid 65534), not by you (root, uid 0)"
    assert_refused(serve, "DSHWEB_DATA_DIR", says)
    assert f"chown -R root {data}" in serve.stderr  # the command that fixes it
    assert "point DSHWEB_DATA_DIR at a folder of your own" in serve.stderr
    assert_refused(migrate, "DSHWEB_DATA_DIR", says)
    assert_problem_row(doctor, "data folder", says)
    assert_problem_row(manage_doctor, "data folder", says)
    refused = r"^note +database +not looked at: DSHWEB_DATA_DIR is refused"
    assert re.search(refused, doctor.stdout, re.M), doctor
    assert daphne.code == 2 and f"dshweb: DSHWEB_DATA_DIR: {says}" in daphne.stderr, daphne
    assert "Traceback" not in daphne.stderr, daphne
    assert "http://" not in serve.stdout  # it never said where it serves
