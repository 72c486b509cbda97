"""From ``dshweb serve`` to ready: how long a person's dashboard, or a unit of
``deploy/``, waits before it answers ``/readyz`` 200 and tells systemd ``READY=1``.

Usage: python bench/ready_bench.py [--size 5000] [--big-copies 3] [--timeout 900]

For each home it prepares a data folder as an earlier start would have (database, key,
static files), then starts the real ``dshweb serve`` (bootstrap, static files, Daphne:
what ``scripts/start`` and ``deploy/dshweb.service`` run) with a datagram socket as
``$NOTIFY_SOCKET``, asks nothing but ``/healthz`` and ``/readyz`` (each every 0.1 s), and
prints the seconds from the process's start to its first ``/healthz`` 200 (listening), to
its first ``/readyz`` 200 (the home folded through, the database answering) and to
``READY=1``; then, once the hub has saved its last fold checkpoints (a stop does not
save them: it waits :data:`~dshweb.live.timing.CHECKPOINT_EVERY` and a second), it
restarts the same server and times the same again. The homes:

- ``empty``: a home with no session (the baseline: Django, Daphne, the bootstrap);
- ``demo``: the bundled demo home (no ``DSH_HOME``: what a fresh ``scripts/start`` shows);
- ``scale-N``: N sessions of real DSH logs (``bench/scale_home.py``, built if missing).

It fails loudly when a server does not get ready within ``--timeout`` seconds, when
``/readyz`` and ``READY=1`` disagree by more than a second, when a server shows fewer
sessions than its home holds (the demo's replay may add one), or when a restart refused
its checkpoints (the fold's code changed meanwhile: a restart then is a cold start; on the
demo home, any but its replay's, whose log grows meanwhile). The last line:
``empty_ready_s=… demo_ready_s=… big_ready_s=… big_restart_ready_s=…
demo_over_empty_s=… big_over_empty_s=…``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import socket
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_server import BenchError, Server  # noqa: E402
from scale_home import build_home  # noqa: E402

from dshweb.core.log.home import session_logs  # noqa: E402
from dshweb.demo.home import BUNDLED_HOME  # noqa: E402
from dshweb.live.timing import CHECKPOINT_EVERY  # noqa: E402

POLL = 0.1
REFUSED = re.compile(r"(\d+) fold checkpoint\(s\) of .* no longer match their logs")
REPLAYED = 1
"""On the demo home, the checkpoints a restart may refuse: its replay's session grows
between the stop and the restart (the replay writes it on)."""
TOKEN = "ready-bench-metrics-token"


@dataclass(frozen=True, slots=True)
class Start:
    listening: float
    ready: float
    notified: float
    sessions: int


def _status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _sessions(server: Server) -> int:
    """The sessions the server shows (its ``/metrics``: ``dshweb_sessions``)."""
    request = urllib.request.Request(
        f"{server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        found = re.search(r"^dshweb_sessions\{[^}]*\} (\S+)$", reply.read().decode(), re.M)
    return int(float(found[1])) if found else 0


def timed_start(server: Server, notify: socket.socket, timeout: float) -> Start:
    """Start ``server`` and time it to listening, ready and READY=1."""
    while True:  # what an earlier run sent
        try:
            notify.recv(4096)
        except BlockingIOError:
            break
    server.start(wait=False)
    listening = ready = notified = None
    deadline = time.monotonic() + timeout
    while ready is None or notified is None:
        if time.monotonic() > deadline:
            raise server.fail(f"not ready within {timeout:.0f} s")
        if server.process is None or server.process.poll() is not None:
            raise server.fail("the server exited")
        while notified is None:
            try:
                message = notify.recv(4096).decode()
            except BlockingIOError:
                break
            if "READY=1" in message.splitlines():
                notified = server.since_start()
        try:
            if listening is None and _status(f"{server.url}/healthz")[0] == 200:
                listening = server.since_start()
            if listening is not None and ready is None:
                status, said = _status(f"{server.url}/readyz")
                if status == 200:
                    ready = server.since_start()
                elif status != 503:
                    raise server.fail(f"/readyz answered {status}: {said}")
        except OSError:
            pass  # not listening yet
        time.sleep(POLL)
    assert listening is not None
    if abs(ready - notified) > 1.0:
        raise server.fail(f"/readyz said ready at {ready:.1f} s, READY=1 came at {notified:.1f} s")
    return Start(listening, ready, notified, _sessions(server))


def run(name: str, home: Path, expected: int, folder: Path, timeout: float) -> list[Start]:
    """A cold start and a restart of ``dshweb serve`` on ``home``."""
    notify_path = Path(tempfile.mkdtemp(prefix="dshweb-notify-")) / "notify"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.setblocking(False)
    extra = {"NOTIFY_SOCKET": str(notify_path), "DSHWEB_METRICS_TOKEN": TOKEN}
    if name == "demo":
        extra["DSHWEB_NO_DEMO"] = "0"
    server = Server(home=home, data_dir=folder / name / "data", extra_env=extra)
    server.as_dshweb_serve()
    try:
        # Not the first start of a data folder: that one signs with a key of its own
        # until bootstrap has kept one, and its checkpoints are refused at the next start.
        server.prepare()
    except BenchError:
        notify.close()
        raise
    starts = []
    try:
        for kind in ("cold start", "restart"):
            start = timed_start(server, notify, timeout)
            time.sleep(CHECKPOINT_EVERY + 1)  # the fold state of the last slices, saved
            server.stop()
            starts.append(start)
            print(
                f"{name:>10} {kind:<10}: listening {start.listening:6.2f} s, ready "
                f"{start.ready:7.2f} s, READY=1 {start.notified:7.2f} s; "
                f"{start.sessions} sessions shown",
                flush=True,
            )
            if start.sessions < expected:
                raise server.fail(f"{start.sessions} sessions shown, the home holds {expected}")
            refused = REFUSED.search(server.output()) if kind == "restart" else None
            if refused and int(refused[1]) > (REPLAYED if name == "demo" else 0):
                raise server.fail(f"the restart folded afresh: {refused[0]}")
    finally:
        server.stop()
        notify.close()
        shutil.rmtree(notify_path.parent, ignore_errors=True)
    return starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--big-copies", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    big = build_home(args.size, big_copies=args.big_copies)
    folder = Path(tempfile.mkdtemp(prefix="dshweb-ready-bench-"))
    try:
        empty = folder / "empty-home"
        (empty / "sessions").mkdir(parents=True)
        demo_sessions = len(session_logs(BUNDLED_HOME))
        print(f"homes: empty; demo (bundled); scale-{args.size} ({big.path})", flush=True)
        runs = {
            "empty": run("empty", empty, 0, folder, args.timeout),
            "demo": run("demo", folder / "no-dsh-home", demo_sessions, folder, args.timeout),
            "big": run(f"scale-{args.size}", big.path, args.size, folder, args.timeout),
        }
    except BenchError as error:
        sys.exit(f"FAILED: {error}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    empty_s, demo_s, big_s = (runs[k][0].ready for k in ("empty", "demo", "big"))
    print(
        f"empty_ready_s={empty_s:.2f} demo_ready_s={demo_s:.2f} big_ready_s={big_s:.2f} "
        f"big_restart_ready_s={runs['big'][1].ready:.2f} "
        f"demo_over_empty_s={demo_s - empty_s:.2f} big_over_empty_s={big_s - empty_s:.2f}"
    )


if __name__ == "__main__":
    main()
