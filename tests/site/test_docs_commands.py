"""Every shell command in the README and docs/ is accounted for, so the docs cannot rot:
each is run here as written (options in ``[brackets]`` left out, a placeholder given a
value), or named with the test that runs the same thing, or said to need what a test
machine has not (another machine, the public network, an hour) — and a command added
to the docs without one of the three fails here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_HOMES, REPO
from tests.support.child_server import HOST, free_port, spawn, terminate

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.M | re.S)
START_TIMEOUT = 120.0


def shell_commands(text: str) -> list[str]:
    """The commands of a document's ``sh`` blocks: continuation lines joined, comments
    and blank lines left out, runs of spaces made one."""
    commands = []
    for block in BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            if line:
                commands.append(re.sub(r"\s+", " ", line))
    return commands


def documented() -> dict[str, str]:
    """Every documented command, with the document it is in."""
    return {
        command: doc.relative_to(REPO).as_posix()
        for doc in DOCS
        for command in shell_commands(doc.read_text(encoding="utf-8"))
    }


# -- run here, as written -----------------------------------------------------------------


def _started(tmp_path: Path, env: dict[str, str], headers: dict[str, str]) -> str:
    """``scripts/start`` with ``env`` on a free port and a data folder of its own, until its
    sign-in page answers (with ``headers``); what it printed."""
    port = free_port()
    data = tmp_path / "data"
    log = tmp_path / "start.log"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
    base |= {"DSHWEB_PORT": str(port), "DSHWEB_DATA_DIR": str(data)}
    base |= {"DSH_HOME": str(tmp_path / "no-dsh-home")}
    process = spawn(["scripts/start"], cwd=REPO, env=base | env, log=log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            try:
                probe = urllib.request.Request(
                    f"http://{HOST}:{port}/accounts/login/", headers=headers
                )
                with urllib.request.urlopen(probe, timeout=2) as answer:
                    if answer.status == 200:
                        page = answer.read().decode()
                        break
            except OSError:
                time.sleep(0.2)
        assert 'name="username"' in page
        assert (data / "db.sqlite3").stat().st_mode & 0o077 == 0  # private, as promised
        return log.read_text(errors="replace")
    finally:
        terminate(process)


def quick_start(tmp_path: Path) -> None:
    said = _started(tmp_path, {}, {})
    assert "demo home" in said.lower() or (tmp_path / "data" / "demo-home").is_dir()
    assert re.search(r"password", said, re.I), said[-2000:]  # the first admin's, once


def behind_a_tls_proxy(tmp_path: Path) -> None:
    env = {"DSHWEB_BEHIND_TLS_PROXY": "1", "DSHWEB_ALLOWED_HOSTS": "dsh.example.com"}
    said = _started(tmp_path, env, {"Host": "dsh.example.com", "X-Forwarded-Proto": "https"})
    assert "behind a TLS proxy" in said


def snapshot_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
    env |= {"DSH_HOME": str(home), "DSHWEB_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [".venv/bin/python", "manage.py", "dsh_snapshot", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    sessions = json.loads(done.stdout)
    assert [s["sessionId"] for s in sessions] == ["auto-compact"], done.stdout[:500]


RUN_HERE: dict[str, Callable[[Path], None]] = {
    "scripts/start": quick_start,
    "DSHWEB_BEHIND_TLS_PROXY=1 DSHWEB_ALLOWED_HOSTS=dsh.example.com scripts/start": (
        behind_a_tls_proxy
    ),
    ".venv/bin/python manage.py dsh_snapshot [--home DIR] [--session ID] [--at-seq N] "
    "[--profile P] [--patch FILE]... --json": snapshot_json,
}

# -- run by another test ------------------------------------------------------------------

_INSTALLED = (
    "tests/browser/test_install.py: the wheel of this checkout installed with pip into a "
    "fresh venv outside it (what pipx does), served, signed in to in Chromium"
)
_PROGRAM = "tests/site/test_program.py (the verbs, their help, and the commands behind them)"
_PROMTOOL = "tests/api/test_monitoring.py (Debian's promtool, on the shipped rules)"
ELSEWHERE: dict[str, str] = {
    "scripts/test": "the suite itself (before each commit)",
    "scripts/test --coverage": ".ci/run (the suite itself with its coverage, on a clean clone)",
    "pipx install /path/to/dshweb": _INSTALLED,
    "dshweb serve --open": _INSTALLED,
    "dshweb serve [--home PATH] [--host 127.0.0.1] [--port 8000] [--open]": _INSTALLED,
    "dshweb snapshot [--home PATH] [--session ID] [--at-seq N] [--json]": _INSTALLED,
    "dshweb doctor [--home PATH]": _INSTALLED,
    "dshweb collect --home PATH --name NAME": (
        "tests/collect/test_collector.py (manage.py dshweb_collect, the command behind it)"
    ),
    "dshweb user add NAME [--staff]": _PROGRAM,
    "dshweb user passwd NAME [--password-stdin]": _PROGRAM,
    "dshweb --version": _PROGRAM,
    "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 dshweb serve": (
        "tests/otlp/test_live.py (the live export the server starts beside its hub, to an "
        "OTLP/HTTP receiver on 127.0.0.1) and tests/otlp/test_setup.py (the variables)"
    ),
    "dshweb export-otlp --home PATH [--since DATE]": (
        "tests/otlp/test_backfill.py (manage.py dshweb_export_otlp, the command behind it)"
    ),
    "scripts/messages": (
        "tests/site/test_translations.py (the catalog it writes: all translated, .mo compiled)"
    ),
    "scripts/messages compile": "tests/site/test_translations.py (the .mo is the compiled .po)",
    "scripts/screenshots": "tests/browser/test_screenshots.py (its pictures, made again)",
    "promtool check rules dshweb/api/monitoring/prometheus-rules.yml": _PROMTOOL,
    "promtool test rules tests/api/prometheus-rules.test.yml": _PROMTOOL,
}

# -- not on a test machine ----------------------------------------------------------------

_TEAM = (
    "a team's own machines (10.0.0.5, port 80, ~/.dsh); the same set-up on 127.0.0.1 is "
    "tests/collect/test_worker_processes.py and tests/collect/test_shared_stores.py"
)
_REGENERATE = "the public network (GitHub, npm): tests/fixtures/regenerate.py, by hand"
_BENCHMARK = (
    "a benchmark: minutes to an hour of load, run by hand; each prints what it did and "
    "fails loudly when it did less (docs/benchmarks.md)"
)
_SYSTEMD = (
    "a machine run by systemd (a test machine has none running): the units are checked by "
    "systemd-analyze verify in tests/site/test_deploy.py"
)
NOT_HERE: dict[str, str] = {
    "otelcol-contrib --config otelcol.yaml": (
        "an OpenTelemetry Collector, which no registry this project reaches has: its config "
        "is checked by tests/otlp/test_docs.py, dshweb's side against a receiver"
    ),
    "mkdir -p ~/.config/systemd/user && cp deploy/dshweb.service ~/.config/systemd/user/": (
        _SYSTEMD
    ),
    "systemctl --user enable --now dshweb": _SYSTEMD,
    'loginctl enable-linger "$USER"': _SYSTEMD,
    "cp deploy/dshweb-collect@.service deploy/dshweb-web@.service /etc/systemd/system/": (_SYSTEMD),
    "systemctl enable --now dshweb-web@8000 dshweb-web@8001 dshweb-collect@server": _SYSTEMD,
    "sudo -u postgres psql -c \"CREATE USER dshweb PASSWORD 'db-secret'\" "
    '-c "CREATE DATABASE dshweb OWNER dshweb"': _TEAM,
    "redis-server --bind 10.0.0.5 --requirepass redis-secret --daemonize yes": _TEAM,
    "export DATABASE_URL=postgres://dshweb:db-secret@10.0.0.5:5432/dshweb": _TEAM,
    "export DSHWEB_REDIS_URL=redis://:redis-secret@10.0.0.5:6379/0": _TEAM,
    "export DSHWEB_SECRET_KEY=…the same long random string on every machine…": _TEAM,
    "export DSHWEB_SECRET_KEY=…the same…": _TEAM,
    "export DSHWEB_BEHIND_TLS_PROXY=1 DSHWEB_ALLOWED_HOSTS=dsh.example.com": _TEAM,
    "DSHWEB_COLLECT=off DSHWEB_PORT=8000 scripts/start &": _TEAM,
    "DSHWEB_COLLECT=off DSHWEB_PORT=8001 scripts/start &": _TEAM,
    "DSHWEB_ENGINE=managed .venv/bin/python manage.py dshweb_collect --home ~/.dsh "
    "--name server &": _TEAM,
    "DSHWEB_ENGINE_URL='http://127.0.0.1:7345/?token=…' .venv/bin/python manage.py "
    "dshweb_collect --home ~/.dsh --name laptop": _TEAM,
    ".venv/bin/pip install 'deepseek-harness-sdk==0.2.1rc2'": _REGENERATE,
    "git clone https://github.com/deepseekv41flash/dsh-context-truth /tmp/dsh-context-truth": (
        _REGENERATE
    ),
    "npm install -g pnpm": _REGENERATE,
    "DSHWEB_CONTEXT_TRUTH=/tmp/dsh-context-truth .venv/bin/python tests/fixtures/regenerate.py": (
        _REGENERATE
    ),
    ".venv/bin/python tests/fixtures/regenerate.py --demo": (
        "the real DSH runtime against the fake model, by hand: tests/fixtures/regenerate.py "
        "(tests/demo/test_demo_sessions.py checks what it made)"
    ),
    ".venv/bin/python bench/make_big_home.py": _BENCHMARK,
    ".venv/bin/python bench/ready_bench.py [--size 5000] [--big-copies 3]": _BENCHMARK,
    ".venv/bin/python bench/fold_bench.py [HOME]": _BENCHMARK,
    ".venv/bin/python bench/scale_bench.py --sizes 100,1000,5000 [--big-copies 20]": _BENCHMARK,
    ".venv/bin/python bench/hub_bench.py --sizes 1000,5000 --rounds 5": _BENCHMARK,
    ".venv/bin/python bench/live_bench.py --home-size 1000 --seconds 20 --list-clients 1": (
        _BENCHMARK
    ),
    ".venv/bin/python bench/team_bench.py [--collectors 2] [--home-size 2500] [--workers 4] "
    "[--idle-sockets 1000] [--sessions 20] [--seconds 20] [--baseline-size 50]": _BENCHMARK,
    ".venv/bin/python bench/soak.py [--minutes 60]": _BENCHMARK,
    ".venv/bin/python bench/metrics_bench.py [--sizes 100,1000,10000] [--live 20]": _BENCHMARK,
    ".venv/bin/python bench/spend_bench.py [--sizes 100,1000,5000] [--days 60]": _BENCHMARK,
    ".venv/bin/python bench/first_page.py [--budget 40]": _BENCHMARK,
    ".venv/bin/python bench/hostile_home.py [--baseline TREE] [--kind KIND]": _BENCHMARK,
}


def test_every_command_in_the_docs_is_accounted_for() -> None:
    found = documented()
    known = RUN_HERE.keys() | ELSEWHERE.keys() | NOT_HERE.keys()
    assert {c: doc for c, doc in found.items() if c not in known} == {}
    assert sorted(known - found.keys()) == []  # nothing listed here that the docs dropped


def test_the_parser_joins_lines_and_drops_comments() -> None:
    text = "x\n```sh\na --b \\\n    c   # note\n# only a comment\n\nd\n```\n```python\ne\n```\n"
    assert shell_commands(text) == ["a --b c", "d"]


@pytest.mark.parametrize("command", sorted(RUN_HERE))
def test_a_documented_command_runs_as_written(command: str, tmp_path: Path) -> None:
    RUN_HERE[command](tmp_path)
