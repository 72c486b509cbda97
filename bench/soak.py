"""A soak: dshweb serving a home whose sessions keep growing, for a given time, with
sockets open, downloads abandoned and an alert receiver that fails now and then.

    python bench/soak.py --minutes 60

What runs (everything on 127.0.0.1, every loop bounded by the run's deadline):

- the real server (``python -m daphne``, prepared as ``scripts/start`` prepares it,
  :mod:`bench.bench_server`) on a home of ``--sessions`` (20) sessions, each appended
  to as DSH appends: one whole zstd frame per write, ``fsync``ed, a step per frame (the
  user's message, the answer with its usage, ``step/end``) and an automatic compaction
  every ``--compact-every`` steps, each session at ``--rate`` frames per second
  (jittered). The event shapes are those of :mod:`tests.support.compactionlog` (the real runtime's);
  the sessions grow for the whole run, so what dshweb keeps per session is seen to
  stay bounded or not;
- ``--session-sockets`` (10) session sockets and ``--list-sockets`` (2) list sockets,
  each counting its messages; a socket the server closes is counted *lost*;
- every ``--abandon-every`` seconds a step download (``steps.csv`` or the API's
  ``/steps``) read to its headers and dropped;
- an alert rule firing on every fold of every session, delivered to a webhook
  receiver here that answers 500 to one request in four;
- every ``--sample-every`` (10) seconds the server's RSS, open descriptors and threads
  (``/proc``) and its event loop's tasks (``dshweb_event_loop_tasks`` on ``/metrics``).

It prints each sample, then the slope of each series over the second half of the run
(after warm-up), the sockets lost, the deliveries the receiver saw, and whether every
session's figures on the server equal a fresh fold of the same logs made here. It exits
1 when a check fails or when it did less than it was asked (a writer that stopped, no
fold or no delivery seen), with what it did.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import random
import re
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_server import HOST, Server  # noqa: E402
from websockets.sync.client import connect  # noqa: E402
from websockets.typing import Origin  # noqa: E402

from tests.support.compactionlog import _answer, _compaction, user_message  # noqa: E402
from tests.support.logbuilder import event, frame, header  # noqa: E402

PROJECT = "--soak--"
METRICS_TOKEN = "soak-metrics-token-not-secret"


# -- the sessions -------------------------------------------------------------------------


@dataclass
class Writer:
    """One session appended to as DSH appends it: a frame per step, fsynced."""

    path: Path
    compact_every: int
    seq: int = 0
    step: int = 0
    surface_start: int = 0
    frames: int = 0
    compactions: int = 0

    @classmethod
    def create(cls, home: Path, name: str, compact_every: int) -> Writer:
        folder = home / "sessions" / PROJECT / name
        folder.mkdir(parents=True)
        (folder / "session.lock").touch()
        path = folder / "session.v4.jsonl.zstd"
        writer = cls(path, compact_every)
        first = header(name) | {"cwd": "/soak"}
        writer._write(frame(first, user_message(0, "start " * 100)))
        writer.seq = 1
        return writer

    def _write(self, data: bytes) -> None:
        with self.path.open("ab") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        self.frames += 1

    def grow(self) -> None:
        self.step += 1
        since = self.step % self.compact_every or self.compact_every
        lines: list[dict[str, Any]] = [
            user_message(self.seq, "more " * 40),
            _answer(self.seq + 1, self.step, 1_500 + 120 * since),
            event(self.seq + 2, "step/end", turn=self.step, step=1),
        ]
        self.seq += 3
        if self.step % self.compact_every == 0:
            # the fold replaces the surface up to this step's answer (step/end is not on it)
            lines += _compaction(self.seq, self.step, self.surface_start, self.seq - 2)
            self.surface_start = self.seq + 2
            self.seq += 4
            self.compactions += 1
        self._write(frame(*lines))


def grow_all(writers: list[Writer], rate: float, deadline: float, stop: threading.Event) -> None:
    rng = random.Random(7)
    due = {id(w): time.monotonic() + rng.random() / rate for w in writers}
    while not stop.is_set() and time.monotonic() < deadline:
        writer = min(writers, key=lambda w: due[id(w)])
        wait = due[id(writer)] - time.monotonic()
        if wait > 0 and stop.wait(wait):
            return
        writer.grow()
        due[id(writer)] += rng.uniform(0.5, 1.5) / rate


# -- the receiver ---------------------------------------------------------------------------


@dataclass
class Receiver:
    """A webhook receiver that answers 500 to one request in four."""

    seen: int = 0
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self) -> tuple[http.server.ThreadingHTTPServer, int]:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                with receiver.lock:
                    receiver.seen += 1
                    fail = receiver.seen % 4 == 0
                    receiver.failed += fail
                self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, server.server_address[1]


# -- the clients --------------------------------------------------------------------------


@dataclass
class Socket:
    path: str
    messages: int = 0
    lost: int = 0
    error: str = ""


def hold_socket(server: Server, sock: Socket, deadline: float, stop: threading.Event) -> None:
    """Keep one socket open until the deadline, counting messages; reopen one the server
    closed (counted lost)."""
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            with connect(
                f"ws://{HOST}:{server.port}{sock.path}",
                origin=Origin(f"http://{HOST}:{server.port}"),
                additional_headers={"Cookie": f"sessionid={server.cookie}"},
                open_timeout=30,
                max_size=2**28,
            ) as live:
                while not stop.is_set() and time.monotonic() < deadline:
                    try:
                        live.recv(timeout=1.0)
                        sock.messages += 1
                    except TimeoutError:
                        continue
        except Exception as error:  # a close the client did not ask for
            if stop.is_set() or time.monotonic() >= deadline:
                return
            sock.lost += 1
            sock.error = repr(error)[:200]
            stop.wait(1.0)


def abandon(server: Server, path: str) -> bool:
    """Ask for ``path``, read the headers, hang up; whether they said 200."""
    with socket.create_connection((HOST, server.port), timeout=30) as conn:
        cookie = f"Cookie: sessionid={server.cookie}"
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n{cookie}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            piece = conn.recv(4096)
            if not piece:
                break
            head += piece
    return head.startswith(b"HTTP/1.1 200")


# -- sampling -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    at: float
    rss_mb: float
    fds: int
    threads: int
    tasks: int
    cpu_s: float


def sample(server: Server, started: float) -> Sample:
    assert server.process is not None
    pid = server.process.pid
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    threads = len(os.listdir(f"/proc/{pid}/task"))
    return Sample(
        time.monotonic() - started,
        server.rss_mb(),
        fds,
        threads,
        _loop_tasks(server),
        server.cpu_seconds(),
    )


def _loop_tasks(server: Server, reads: int = 5) -> int:
    """The fewest tasks on the server's loop over a few reads: a socket message being
    rendered at the moment of one read is not a task that stays."""
    seen = []
    for _ in range(reads):
        got = server.get(
            "/metrics", timeout=30, headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
        )
        found = re.search(rb"^dshweb_event_loop_tasks ([0-9.e+]+)$", got.body, re.M)
        seen.append(int(float(found[1])) if found else -1)
        time.sleep(0.05)
    return min(seen)


WARM_UP_S = 300
"""Issue 42: the memory may grow for the first five minutes (caches filling); from then
on it grows by less than 8 MB per 10 minutes, and stays under :data:`PEAK_RSS_MB`."""
PEAK_RSS_MB = 200


def quarters(samples: list[Sample]) -> list[str]:
    """One line per quarter of the run: RSS at its end and its slope over the quarter."""
    if len(samples) < 8:
        return []
    end = samples[-1].at
    lines = []
    for number in range(4):
        inside = [s for s in samples if number * end / 4 <= s.at <= (number + 1) * end / 4]
        lines.append(
            f"soak: quarter {number + 1} (to {inside[-1].at / 60:4.1f} min): RSS"
            f" {inside[-1].rss_mb:6.1f} MB, {slope_per_10min(inside, 'rss_mb'):+6.2f} MB per 10 min"
        )
    return lines


def slope_per_10min(samples: list[Sample], attr: str) -> float:
    xs = [s.at for s in samples]
    ys = [float(getattr(s, attr)) for s in samples]
    if len(xs) < 3:
        return float("nan")
    return statistics.linear_regression(xs, ys).slope * 600


# -- the end ------------------------------------------------------------------------------


def fresh_fold(home: Path) -> dict[str, dict[str, Any]]:
    """Every session's figures from a cold fold of the logs, made here."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dshweb.settings")
    from dshweb.core.fold.gauge import context_gauge
    from dshweb.core.fold.index import HomeIndex

    index = HomeIndex(home)
    index.refresh()
    shown: dict[str, dict[str, Any]] = {}
    for shot in index.snapshots():
        gauge = context_gauge(shot)
        shown[shot.session_id] = {
            "events": shot.events,
            "lastSeq": shot.last_seq,
            "usedTokens": gauge.used,
            "windowTokens": gauge.window,
            "thresholdTokens": gauge.threshold,
            "percent": gauge.percent,
            "compactions": shot.ledger.summaries,
            "tokenUsage": shot.token_usage,
            "contextPressure": shot.context_pressure,
            "contextBreakdown": shot.context_breakdown,
            "errors": list(shot.errors),
        }
    return shown


def served_figures(server: Server, session_id: str) -> dict[str, Any]:
    got = server.get(f"/api/v1/homes/local/sessions/{session_id}", timeout=30)
    if got.status != 200:
        return {"status": got.status}
    body = json.loads(got.body)
    keys = (
        *("events", "lastSeq", "usedTokens", "windowTokens", "thresholdTokens", "percent"),
        *("compactions", "tokenUsage", "contextPressure", "contextBreakdown", "errors"),
    )
    return {key: body.get(key) for key in keys}


def run(args: argparse.Namespace, tmp: Path) -> int:
    home = tmp / "home"
    (home / "sessions").mkdir(parents=True)
    writers = [
        Writer.create(home, f"soak-{n:02d}", args.compact_every) for n in range(args.sessions)
    ]
    receiver = Receiver()
    hook_server, hook_port = receiver.serve()
    _started.append(hook_server.shutdown)
    server = Server(
        home,
        tmp / "data",
        extra_env={
            "DSHWEB_METRICS_TOKEN": METRICS_TOKEN,
            "DSHWEB_WEBHOOK_ALLOWED_HOSTS": HOST,
        },
    )
    _started.append(server.stop)  # nothing when it has stopped already
    server.prepare()
    server._manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model\n"
        "from dshweb.alerts.models import AlertRule\n"
        "AlertRule.objects.create(owner=get_user_model().objects.get(username='bench'),"
        " name='every fold', condition='folded', cooldown_seconds=0, notify_browser=True,"
        f" webhook_url='http://{HOST}:{hook_port}/hook')\n",
    )
    server.start()
    server.wait_answering(time.monotonic() + 60)
    server.login(30)
    started = time.monotonic()
    deadline = started + args.minutes * 60
    stop = threading.Event()
    sockets = [
        Socket(f"/ws/homes/local/sessions/soak-{n % args.sessions:02d}/")
        for n in range(args.session_sockets)
    ] + [Socket("/ws/sessions/") for _ in range(args.list_sockets)]
    threads = [
        threading.Thread(target=grow_all, args=(writers, args.rate, deadline, stop), daemon=True)
    ]
    threads += [
        threading.Thread(target=hold_socket, args=(server, s, deadline, stop), daemon=True)
        for s in sockets
    ]
    for thread in threads:
        thread.start()
    samples: list[Sample] = []
    abandoned = refused = 0
    next_abandon = started + args.abandon_every
    print(
        f"soak: {args.sessions} sessions at {args.rate}/s each, {args.session_sockets} session"
        f" + {args.list_sockets} list sockets, a download abandoned every"
        f" {args.abandon_every:.0f} s, for {args.minutes:g} min"
    )
    print("   t(s)   rss(MB)  fds  threads  tasks  cpu(s)  frames  folds  hooks")
    failed = False
    try:
        while time.monotonic() < deadline:
            now = time.monotonic()
            if server.process is None or server.process.poll() is not None:
                print("soak: the server exited")
                failed = True
                break
            if now >= next_abandon:
                target = writers[abandoned % len(writers)].path.parent.name
                path = (
                    f"/api/v1/homes/local/sessions/{target}/steps"
                    if abandoned % 2
                    else f"/homes/local/sessions/{target}/steps.csv"
                )
                refused += not abandon(server, path)
                abandoned += 1
                next_abandon += args.abandon_every
            if not samples or now - started - samples[-1].at >= args.sample_every:
                taken = sample(server, started)
                samples.append(taken)
                print(
                    f"{taken.at:7.0f} {taken.rss_mb:9.1f} {taken.fds:4d} {taken.threads:8d}"
                    f" {taken.tasks:6d} {taken.cpu_s:7.1f} {sum(w.frames for w in writers):7d}"
                    f" {sum(w.compactions for w in writers):6d} {receiver.seen:6d}",
                    flush=True,
                )
            time.sleep(0.2)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    time.sleep(3)  # the last frames reach the pages
    second = [s for s in samples if s.at >= samples[-1].at / 2] if samples else []
    slopes = {a: slope_per_10min(second, a) for a in ("rss_mb", "fds", "threads", "tasks")}
    warm = [s for s in samples if s.at >= WARM_UP_S]
    warm_slope = slope_per_10min(warm, "rss_mb")
    peak_mb = max((s.rss_mb for s in samples), default=float("nan"))
    wanted = fresh_fold(home)
    mismatched = [sid for sid, figures in wanted.items() if served_figures(server, sid) != figures]
    stop_seconds = server.stop()
    hook_server.shutdown()
    lost = sum(s.lost for s in sockets)
    frames, compactions = sum(w.frames for w in writers), sum(w.compactions for w in writers)
    minutes = (min(time.monotonic(), deadline) - started) / 60
    print(
        f"soak: {minutes:.1f} min, {frames} frames ({frames / max(1, minutes * 60):.1f}/s),"
        f" {compactions} folds, {abandoned} downloads abandoned ({refused} not 200),"
        f" {receiver.seen} webhook requests ({receiver.failed} answered 500)"
    )
    print(
        f"soak: second half, per 10 min: RSS {slopes['rss_mb']:+.2f} MB, fds"
        f" {slopes['fds']:+.2f}, threads {slopes['threads']:+.2f}, tasks {slopes['tasks']:+.2f};"
        f" RSS {samples[0].rss_mb:.0f} -> {samples[-1].rss_mb:.0f} MB;"
        f" CPU {samples[-1].cpu_s:.0f} s ({samples[-1].cpu_s / max(1, samples[-1].at):.0%});"
        f" load {os.getloadavg()[0]:.2f}"
    )
    for line in quarters(samples):
        print(line)
    print(
        f"soak: from minute {WARM_UP_S // 60} on, RSS per 10 min {warm_slope:+.2f} MB"
        f" ({len(warm)} samples); peak RSS {peak_mb:.1f} MB"
    )
    print(
        f"soak: sockets lost {lost} of {len(sockets)} ({sum(s.messages for s in sockets)}"
        f" messages); figures equal to a fresh fold: {len(wanted) - len(mismatched)} of"
        f" {len(wanted)}; SIGTERM to exit {stop_seconds:.1f} s"
    )
    for sock in sockets:
        if sock.lost:
            print(f"  lost {sock.lost}x {sock.path}: {sock.error}")
    checks = {
        "memory slope < 8 MB per 10 min (second half)": slopes["rss_mb"] < 8,
        f"memory slope < 8 MB per 10 min from minute {WARM_UP_S // 60} on": len(warm) < 3
        or warm_slope < 8,
        f"peak RSS < {PEAK_RSS_MB} MB": peak_mb < PEAK_RSS_MB,
        "no growth in descriptors": slopes["fds"] < 1,
        "no growth in threads": slopes["threads"] < 1,
        "no growth in tasks": slopes["tasks"] < 1,
        "no socket lost": lost == 0,
        "every figure equals a fresh fold": not mismatched and len(wanted) == args.sessions,
        "the logs fold without a problem": not any(f["errors"] for f in wanted.values()),
        "did what it was asked": compactions > 0
        and receiver.seen > 0
        and abandoned > 0
        and minutes >= args.minutes * 0.95,
    }
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    if mismatched:
        print(f"  mismatched sessions: {mismatched[:5]}")
    return 0 if all(checks.values()) and not failed else 1


_started: list[Callable[[], object]] = []
"""How to stop what :func:`run` started, however it ends (Ctrl-C too)."""


def main() -> int:
    try:
        return _main()
    finally:
        for stop in reversed(_started):
            stop()


def _main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--rate", type=float, default=2.0, help="frames per second per session")
    parser.add_argument("--compact-every", type=int, default=25, help="steps between compactions")
    parser.add_argument("--session-sockets", type=int, default=10)
    parser.add_argument("--list-sockets", type=int, default=2)
    parser.add_argument("--abandon-every", type=float, default=15.0)
    parser.add_argument("--sample-every", type=float, default=10.0)
    parser.add_argument("--keep", type=Path, help="keep the home and data here")
    args = parser.parse_args()
    if args.keep:
        shutil.rmtree(args.keep, ignore_errors=True)
        args.keep.mkdir(parents=True)
        return run(args, args.keep)
    with tempfile.TemporaryDirectory(prefix="dshweb-soak-") as tmp:
        return run(args, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
