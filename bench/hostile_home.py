"""How a real ``dshweb serve`` copes with a hostile file at every path it reads (issue 47).

For each kind of hostile file (tests/support/hostile_homes.py: FIFO, device, link to an endless
file, huge file, unreadable file and folder), a home with that kind at every file the
server reads beside two sessions that are fine; a real server (``manage.py dshweb_serve``)
from this checkout and, with ``--baseline TREE``, from another source tree (e.g. ``git
worktree add /tmp/base f4ab7dd``). Prints, per kind and tree: the seconds until the API
lists the good sessions (``listed``, after the sign-in page first answered: ``ready``,
both from the start) and a session started then (``new``), until ``/settings/``
answers, from SIGTERM to exit, and for ``dshweb doctor`` to return; a wait that ends at
its bound is printed as ``>N``.

    .venv/bin/python bench/hostile_home.py [--baseline /tmp/base] [--kind fifo]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.conftest import FIXTURE_HOMES  # noqa: E402
from tests.support.hostile_homes import GOOD_SESSIONS, KINDS, Kind, hostile_home, release  # noqa: E402
from tests.support.server import DshwebServer  # noqa: E402
from tests.support.unprivileged import without_reading_rights  # noqa: E402
from tests.support.visitor import Visitor  # noqa: E402

LIST_BOUND = 30.0
SETTINGS_BOUND = 10.0
STOP_BOUND = 15.0
DOCTOR_BOUND = 30.0


def _seconds(value: float | None, bound: float) -> str:
    return f">{bound:g}" if value is None else f"{value:.2f}"


def _until_listed(visitor: Visitor, started: float) -> float | None:
    while time.monotonic() < started + LIST_BOUND:
        try:
            status, body = visitor.get("/api/v1/sessions?per_page=50")
        except (OSError, urllib.error.URLError):
            status, body = 0, ""
        if status == 200:
            listed = {row["sessionId"] for row in json.loads(body)["sessions"]}
            if listed >= set(GOOD_SESSIONS):
                return time.monotonic() - started
        time.sleep(0.1)
    return None


def _new_session(visitor: Visitor, home: Path) -> float | None:
    """Seconds until a session DSH starts now is listed (the rest of the home is live)."""
    source = next((FIXTURE_HOMES / "manual-compact" / "sessions").glob("*/manual-compact"))
    started = time.monotonic()
    shutil.copytree(source, home / "sessions" / "--later--" / source.name)
    while time.monotonic() < started + LIST_BOUND:
        try:
            status, body = visitor.get("/api/v1/sessions?per_page=50")
        except (OSError, urllib.error.URLError):
            status, body = 0, ""
        if status == 200 and source.name in body:
            return time.monotonic() - started
        time.sleep(0.05)
    return None


def _settings(visitor: Visitor) -> float | None:
    started = time.monotonic()
    try:
        request = visitor.opener.open(visitor.server.url + "/settings/", timeout=SETTINGS_BOUND)
        request.read()
    except urllib.error.HTTPError:
        pass  # an answer all the same
    except OSError:
        return None
    return time.monotonic() - started


def _stop(server: DshwebServer) -> float | None:
    process = server.process
    assert process is not None
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_BOUND)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
        return None
    finally:
        server.process = None
    return time.monotonic() - started


def _doctor(server: DshwebServer) -> float | None:
    started = time.monotonic()
    try:
        subprocess.run(
            [*server.wrapper, sys.executable, "manage.py", "dshweb_doctor"],
            cwd=server.tree,
            env=server.env(),
            capture_output=True,
            timeout=DOCTOR_BOUND,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    return time.monotonic() - started


def measure(kind: Kind, tree: Path) -> dict[str, float | None]:
    root = Path(tempfile.mkdtemp(prefix="dshweb-hostile-"))
    home = hostile_home(root, kind)
    try:
        server = DshwebServer(home=home, data_dir=root / "data", tree=tree)
        server.as_dshweb_serve()
        server.wrapper = without_reading_rights([]) if kind.unprivileged else []
        server.prepare()
        server.start()
        ready = time.monotonic() - server.started_at
        visitor = Visitor(server)
        found = {
            "ready": ready,
            "listed": _until_listed(visitor, server.started_at),
            "new": _new_session(visitor, home),
            "settings": _settings(visitor),
            "sigterm": _stop(server),
        }
        found["doctor"] = _doctor(server)
        return found
    finally:
        release(home)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="another source tree to measure first")
    parser.add_argument("--kind", choices=list(KINDS), action="append", help="default: all")
    args = parser.parse_args()
    trees = [("baseline", args.baseline)] if args.baseline else []
    trees.append(("this checkout", REPO))
    bounds = {"ready": LIST_BOUND, "listed": LIST_BOUND, "new": LIST_BOUND}
    bounds["settings"] = SETTINGS_BOUND
    bounds["sigterm"] = STOP_BOUND
    bounds["doctor"] = DOCTOR_BOUND
    print(f"{'kind':<24} {'tree':<14} " + " ".join(f"{name:>9}" for name in bounds))
    done = 0
    for name in args.kind or list(KINDS):
        for label, tree in trees:
            found = measure(KINDS[name], tree)
            cells = " ".join(f"{_seconds(found[k], bound):>9}" for k, bound in bounds.items())
            print(f"{name:<24} {label:<14} {cells}", flush=True)
            done += 1
    expected = len(args.kind or KINDS) * len(trees)
    if done != expected:
        raise SystemExit(f"measured {done} of {expected} servers")
    print(f"{done} servers measured (seconds; '>N': still waiting at the bound of N s)")


if __name__ == "__main__":
    main()
