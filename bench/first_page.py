"""From a fresh clone to the first page: ``scripts/start`` in a new clone of this checkout
(no ``.venv``, an empty pip cache: every package fetched from the index as on a new
machine), timed until its sign-in page answers; then the same clone started again (the
venv made, nothing to install), as the baseline measured in the same run.

Prints each phase and the ratio; fails loudly when a start did not answer, or when the
fresh start took more than ``--budget`` seconds (40 by default).

    .venv/bin/python bench/first_page.py [--budget 40]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WAIT = 300.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(clone: Path, folder: Path, name: str) -> tuple[float, str]:
    """Seconds from ``scripts/start`` to a 200 sign-in page, and what it printed."""
    port = _free_port()
    log = folder / f"{name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if ".venv" not in p)
    env |= {
        "DSHWEB_PORT": str(port),
        "DSHWEB_DATA_DIR": str(folder / f"data-{name}"),
        "DSH_HOME": str(folder / "no-dsh-home"),  # the demo home
        "PIP_CACHE_DIR": str(folder / "pip-cache"),  # empty: as on a new machine
    }
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["scripts/start"], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        while time.monotonic() - started < WAIT:
            if process.poll() is not None:
                sys.exit(f"FAILED: scripts/start exited {process.returncode}:\n{log.read_text()}")
            try:
                url = f"http://127.0.0.1:{port}/accounts/login/"
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if answer.status == 200 and b'name="username"' in answer.read():
                        return time.monotonic() - started, log.read_text()
            except OSError:
                time.sleep(0.2)
        sys.exit(f"FAILED: no sign-in page within {WAIT:.0f} s:\n{log.read_text()}")
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=40.0, help="seconds (default 40)")
    budget = parser.parse_args().budget
    folder = Path(tempfile.mkdtemp(prefix="dshweb-first-page-"))
    try:
        clone = folder / "dshweb"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=clone, text=True, capture_output=True
        ).stdout.strip()
        fresh, said = _start(clone, folder, "fresh")
        if not re.search(r"password '\S+'", said):
            sys.exit(f"FAILED: the first start printed no admin password:\n{said}")
        again, _ = _start(clone, folder, "again")
        venv = sum(f.stat().st_size for f in (clone / ".venv").rglob("*") if f.is_file())
        print(f"commit {head}: fresh clone -> first page {fresh:.1f} s (budget {budget:.0f} s)")
        print(f"  second start (venv made) {again:.1f} s; fresh / second = {fresh / again:.1f}x")
        print(f"  .venv holds {venv / 1e6:.0f} MB")
        if fresh > budget:
            sys.exit(f"FAILED: {fresh:.1f} s to the first page, over the {budget:.0f} s budget")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
