"""A team's dashboard under load: collectors, web workers, PostgreSQL and Redis (issue 12).

Usage: python bench/team_bench.py [--collectors 2] [--home-size 2500] [--workers 4]
       [--idle-sockets 1000] [--sessions 20] [--clients 10] [--seconds 20]
       [--idle-seconds 40] [--baseline-size 50] [--postgres-url URL] [--redis-server PATH]

Each of ``--collectors`` homes holds ``--home-size`` idle sessions (:mod:`scale_home`'s
cached home of real DSH logs, hard-linked: nothing of it is written) plus its share of
``--sessions`` growing ones; each is collected by ``manage.py dshweb_collect`` in a
process of its own. ``--workers`` Daphne web workers (``DSHWEB_COLLECT=off``) serve them,
all on one new PostgreSQL database (on ``--postgres-url``'s server, dropped at the end)
and a Redis of the benchmark's own (``redis-server`` on a free port, keeping nothing).

Once every collector has written its home and every worker answers, it opens
``--idle-sockets`` session sockets on idle sessions, spread over the workers and homes,
``--clients`` session sockets on growing sessions and one sessions-list socket per
worker (:mod:`live_sockets`), waits for every socket's on-connect state, then grows the
sessions at DSH's pace (:mod:`growth`: a frame every 50–200 ms each, fsynced) for
``--seconds``: the latency is from a frame's fsync to the update that shows it at a
client. The processes' CPU is read over the growth window (``collector_cpu_pct``, per
collector) and over ``--idle-seconds`` with every socket open and nothing written
(``worker_cpu_pct``, per worker), once every process has settled after the growth (its
CPU under 5% of a core for 1 s); the window spans two of Daphne's 20 s ping rounds, the
sockets' own cost, so both sizes count the same pings. The baseline, in the same run: the
same team on homes of ``--baseline-size`` sessions, idle, with the same sockets:
``worker_idle_ratio`` is the workers' idle CPU on the big homes over the small ones (it must
not grow with the homes).

It prints what it did (homes, frames written, updates, states, reconnects, the largest
message) and ends with ``p50_ms= p95_ms= max_ms= collector_cpu_pct=
worker_cpu_pct= worker_idle_ratio= frames= updates= reconnects= max_ws_kb=``. Exit
status 1 when it did less than it claims (a socket that never sent its state, a session
that stopped writing early, no latency measured, a grown log that does not fold); 3
when frames were never delivered.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from bench_server import REPO, BenchError, Server, free_port
from growth import Feed, read_frames, session_log, source_log, with_id
from live_bench import _check_grown, _grow, _link_tree, _ms
from live_sockets import Client, Ledger
from scale_bench import SETTLE_TIMEOUT, settle
from scale_home import PROFILES, BuildError, build_home

from dshweb.core.log.home import session_logs

READY_S = 300.0
SOCKETS_AT_ONCE = 50
"""Sockets opened together (a page load's worth each): 1,000 at once would time out."""
DRAIN_S = 5.0


@dataclass
class Team:
    """The processes of one team and the homes they serve."""

    homes: dict[str, Path]
    collectors: list[Server]
    workers: list[Server]
    idle_ids: dict[str, list[str]]
    growing: dict[str, tuple[str, Path]] = field(default_factory=dict)
    """Growing session id → (its home, its log)."""


class Stores:
    """A new database on the PostgreSQL server and a Redis of the benchmark's own."""

    def __init__(self, postgres_url: str, redis_server: str, folder: Path) -> None:
        self.server_url = postgres_url
        self.name = f"dshweb_team_bench_{uuid.uuid4().hex[:10]}"
        self.redis_server, self.folder = redis_server, folder
        self.redis: subprocess.Popen[bytes] | None = None
        self.redis_port = free_port()

    def __enter__(self) -> dict[str, str]:
        with psycopg.connect(self._maintenance(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{self.name}"')
        self.folder.mkdir(parents=True, exist_ok=True)
        command = [self.redis_server, "--port", str(self.redis_port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.folder)]
        with (self.folder / "redis.log").open("ab") as log:
            self.redis = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        url = urlunsplit(urlsplit(self.server_url)._replace(path=f"/{self.name}"))
        return {
            "DATABASE_URL": url,
            "DSHWEB_REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "DSHWEB_SECRET_KEY": uuid.uuid4().hex * 2,
        }

    def __exit__(self, *_: object) -> None:
        if self.redis is not None:
            self.redis.terminate()
            self.redis.wait(10)
        with psycopg.connect(self._maintenance(), autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def _maintenance(self) -> str:
        return urlunsplit(urlsplit(self.server_url)._replace(path="/postgres"))

    def collected(self, env: dict[str, str]) -> dict[str, int]:
        """Rows written per home so far."""
        with psycopg.connect(env["DATABASE_URL"]) as db:
            rows = db.execute(
                "SELECT home, COUNT(*) FROM live_collectedsession GROUP BY home"
            ).fetchall()
        return {str(home): int(count) for home, count in rows}


def _homes(args: argparse.Namespace, size: int, root: Path) -> dict[str, Path]:
    built = build_home(size)
    homes: dict[str, Path] = {}
    for index in range(args.collectors):
        home = root / f"home-{index}"
        _link_tree(built.path / "sessions", home / "sessions")
        shutil.copytree(PROFILES, home / "profiles")
        found = len(session_logs(home))
        if found != size:
            raise BenchError(f"{home} holds {found} sessions, {size} asked")
        homes[f"team-{index}"] = home
    return homes


def _start_team(args: argparse.Namespace, env: dict[str, str], size: int, root: Path) -> Team:
    homes = _homes(args, size, root / f"size-{size}")
    idle_ids = {
        name: sorted(log.session_dir.name for log in session_logs(home))
        for name, home in homes.items()
    }
    team = Team(homes, [], [], idle_ids)
    for i in range(args.sessions):
        name = list(homes)[i % len(homes)]
        sid = f"grow-{size}-{i:02d}"
        team.growing[sid] = (name, session_log(homes[name], sid))
    off = env | {"DSHWEB_COLLECT": "off"}
    team.workers = [
        Server(root / "no-home", root / f"size-{size}-worker-{i}", extra_env=dict(off))
        for i in range(args.workers)
    ]
    team.workers[0].prepare()  # migrates the shared database once, makes the user
    team.collectors = [
        Server(
            home,
            root / f"size-{size}-collector-{name}",
            extra_env=dict(env),
            command=["dshweb_collect", "--home", str(home), "--name", name],
        )
        for name, home in homes.items()
    ]
    for process in team.workers[1:] + team.collectors:
        process.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        process._manage("dshweb_bootstrap", "--verbosity", "0")
    return team


def _seed(team: Team, frames: list[bytes], start: int) -> None:
    for sid, (_, path) in team.growing.items():
        path.write_bytes(with_id(frames[0], sid) + b"".join(frames[1:start]))


def _wait_collected(stores: Stores, env: dict[str, str], team: Team) -> float:
    began = time.monotonic()
    expected = {name: len(session_logs(home)) for name, home in team.homes.items()}
    while time.monotonic() < began + READY_S:
        for process in team.collectors:
            if process.process is not None and process.process.poll() is not None:
                raise process.fail(f"a collector exited with {process.process.returncode}")
        if stores.collected(env) == expected:
            return time.monotonic() - began
        time.sleep(0.5)
    logs = "".join(f"\n--- {c.log_path}\n{c.log_tail(1500)}" for c in team.collectors)
    raise BenchError(
        f"the homes were not collected within {READY_S:.0f} s: {stores.collected(env)}{logs}"
    )


def _run_team(
    args: argparse.Namespace,
    stores: Stores,
    env: dict[str, str],
    size: int,
    root: Path,
    feed: Feed,
    source: list[bytes],
    start: int,
    *,
    grow: bool,
) -> dict[str, float]:
    team = _start_team(args, env, size, root)
    _seed(team, source, start)
    try:
        for process in team.collectors:
            process.start()
        collected = _wait_collected(stores, env, team)
        for worker in team.workers:
            worker.start()
        for worker in team.workers:
            worker.wait_answering(time.monotonic() + 60)
            worker.login(timeout=30)
        print(
            f"size {size}: {len(team.homes)} homes of {size} idle + "
            f"{args.sessions // len(team.homes)} growing sessions collected in {collected:.1f} s; "
            f"{len(team.workers)} workers answering",
            flush=True,
        )
        return asyncio.run(_measure(args, team, feed, grow=grow))
    finally:
        for worker in team.workers:
            worker.stop()
        for process in team.collectors:
            process.stop()


async def _open_all(clients: list[Client], timeout: float) -> None:
    for at in range(0, len(clients), SOCKETS_AT_ONCE):
        opened = await asyncio.gather(
            *(c.open(timeout) for c in clients[at : at + SOCKETS_AT_ONCE])
        )
        if not all(opened):
            failed = [c for c in clients[at : at + SOCKETS_AT_ONCE] if c.failure is not None]
            raise BenchError(
                f"{len(failed)} sockets sent no state: {failed[0].path}: {failed[0].failure}"
            )


async def _measure(
    args: argparse.Namespace, team: Team, feed: Feed, *, grow: bool
) -> dict[str, float]:
    ledger, stop = Ledger(), threading.Event()
    rng = random.Random(3)
    names = list(team.homes)
    idle = [
        Client(
            team.workers[i % len(team.workers)],
            Ledger(),
            rng.choice(team.idle_ids[names[i % len(names)]]),
            random.Random(rng.random()),
            home=names[i % len(names)],
        )
        for i in range(args.idle_sockets)
    ]
    watched = list(team.growing)[: args.clients]
    clients = [
        Client(
            team.workers[i % len(team.workers)],
            ledger,
            sid,
            random.Random(rng.random()),
            home=team.growing[sid][0],
        )
        for i, sid in enumerate(watched)
    ]
    lists = [Client(worker, Ledger(), None, random.Random(rng.random())) for worker in team.workers]
    everyone = idle + clients + lists
    opened = time.monotonic()
    await _open_all(everyone, args.ws_timeout)
    print(
        f"   {len(idle)} idle session sockets, {len(clients)} on growing sessions, "
        f"{len(lists)} list sockets: every state received in {time.monotonic() - opened:.1f} s",
        flush=True,
    )
    result: dict[str, float] = {}
    if grow:
        paths = {sid: path for sid, (_, path) in team.growing.items()}
        times: dict[str, list[float]] = {}
        cpu0 = [c.cpu_seconds() for c in team.collectors]
        busy0 = [w.cpu_seconds() for w in team.workers]
        began = time.monotonic()
        writer = threading.Thread(
            target=lambda: times.update(_grow(paths, feed, ledger, args.seconds, stop, {})),
            daemon=True,
        )
        writer.start()
        until = began + args.seconds + DRAIN_S
        await asyncio.gather(*(c.follow(until, args.ws_timeout) for c in everyone))
        await asyncio.to_thread(writer.join, args.seconds + 30)
        window = time.monotonic() - began
        cpus = [
            (c.cpu_seconds() - c0) / window * 100
            for c, c0 in zip(team.collectors, cpu0, strict=True)
        ]
        busy = [
            (w.cpu_seconds() - w0) / window * 100 for w, w0 in zip(team.workers, busy0, strict=True)
        ]
        if len(times) != len(paths):
            raise BenchError("the writer did not finish its window")
        short = [sid for sid, t in times.items() if not t or t[-1] - began < args.seconds - 1.0]
        if short:
            raise BenchError(f"{len(short)} sessions stopped writing early: {short[:5]}")
        _check_grown(paths, ledger)
        frames = sum(len(t) for t in times.values())
        updates = sum(c.updates for c in clients)
        idle_updates = sum(c.updates for c in idle)
        undelivered = ledger.pending(watched)
        if not ledger.latencies:
            raise BenchError("no latency measured: no update matched a written frame")
        p50, p95, top = _ms(ledger.latencies)
        print(
            f"   wrote {frames} frames to {len(paths)} sessions over {args.seconds:.0f} s; "
            f"{updates} updates at {len(clients)} sockets ({len(ledger.latencies)} frames "
            f"resolved by an update, {ledger.resynced} by a state, {undelivered} never); "
            f"{idle_updates} messages at the idle sockets; list sockets "
            f"{sum(c.updates for c in lists)} updates"
        )
        print(
            f"   fsync → update at client: p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {top:.1f} ms; "
            f"while growing, CPU of the collectors {', '.join(f'{c:.1f}%' for c in cpus)} and of "
            f"the workers {', '.join(f'{c:.1f}%' for c in busy)} of a core"
        )
        result |= {
            "p50_ms": p50,
            "p95_ms": p95,
            "max_ms": top,
            "collector_cpu_pct": statistics.mean(cpus),
            "frames": frames,
            "updates": updates,
            "undelivered": undelivered,
        }
        # What the growth left to do (the last writes, a page's last renders) is done
        # before the idle window: idle means nothing changing.
        waited = [
            await asyncio.to_thread(settle, process, time.monotonic() + SETTLE_TIMEOUT)
            for process in team.collectors + team.workers
        ]
        print(f"   every process settled {max(waited):.1f} s after the growth", flush=True)
    cpu0 = [w.cpu_seconds() for w in team.workers]
    t0 = time.monotonic()
    await asyncio.sleep(args.idle_seconds)
    elapsed = time.monotonic() - t0
    idle_cpu = [
        (w.cpu_seconds() - c0) / elapsed * 100 for w, c0 in zip(team.workers, cpu0, strict=True)
    ]
    print(
        f"   idle {args.idle_seconds:.0f} s, every socket open: workers' CPU "
        f"{', '.join(f'{c:.2f}%' for c in idle_cpu)} of a core; RSS "
        f"{', '.join(f'{w.rss_mb():.0f}' for w in team.workers)} MB",
        flush=True,
    )
    reconnects = sum(c.reconnects for c in everyone)
    result |= {
        "worker_cpu_pct": statistics.mean(idle_cpu),
        "reconnects": reconnects,
        "max_ws_kb": max(c.max_size for c in everyone) / 1024,
    }
    for each in everyone:
        await each.close()
    return result


def run(args: argparse.Namespace, tmp: Path) -> int:
    source = read_frames(source_log(None))
    start = min(len(source) // 2, 40)
    feed = Feed(source, start)
    raw = [frame.data for frame in source]
    print(
        f"team_bench: {args.collectors} collectors, {args.workers} web workers, "
        f"PostgreSQL at {urlsplit(args.postgres_url).hostname}, a Redis of its own; growing "
        f"sessions fed from {source_log(None)}",
        flush=True,
    )
    results: dict[int, dict[str, float]] = {}
    for size, grow in ((args.baseline_size, False), (args.home_size, True)):
        stores = Stores(args.postgres_url, args.redis_server, tmp / f"redis-{size}")
        with stores as env:
            results[size] = _run_team(args, stores, env, size, tmp, feed, raw, start, grow=grow)
    big, small = results[args.home_size], results[args.baseline_size]
    # The floor: one clock tick of CPU over the idle window (what /proc can tell apart).
    tick = 100 / (os.sysconf("SC_CLK_TCK") * args.idle_seconds)
    ratio = big["worker_cpu_pct"] / max(small["worker_cpu_pct"], tick)
    print(
        f"workers' idle CPU: {big['worker_cpu_pct']:.2f}% with homes of {args.home_size}, "
        f"{small['worker_cpu_pct']:.2f}% with homes of {args.baseline_size} (the same sockets)"
    )
    print(
        f"p50_ms={big['p50_ms']:.1f} p95_ms={big['p95_ms']:.1f} max_ms={big['max_ms']:.1f} "
        f"collector_cpu_pct={big['collector_cpu_pct']:.2f} "
        f"worker_cpu_pct={big['worker_cpu_pct']:.2f} worker_idle_ratio={ratio:.2f} "
        f"frames={big['frames']:.0f} updates={big['updates']:.0f} "
        f"reconnects={big['reconnects'] + small['reconnects']:.0f} "
        f"max_ws_kb={max(big['max_ws_kb'], small['max_ws_kb']):.0f}"
    )
    if big["undelivered"]:
        print(f"team_bench: {big['undelivered']:.0f} frames never reached their socket")
        return 3
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--collectors", type=int, default=2)
    parser.add_argument("--home-size", type=int, default=2500)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--idle-sockets", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--idle-seconds", type=float, default=40.0)
    parser.add_argument("--baseline-size", type=int, default=50)
    parser.add_argument("--ws-timeout", type=float, default=120.0)
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get("DSHWEB_TEST_POSTGRES_URL")
        or "postgres://postgres@127.0.0.1:5432/postgres",
    )
    parser.add_argument(
        "--redis-server", default=shutil.which("redis-server") or "/usr/bin/redis-server"
    )
    args = parser.parse_args()
    if args.clients > args.sessions:
        parser.error("--clients cannot exceed --sessions")
    (REPO / "bench" / "data").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="team-bench-", dir=REPO / "bench" / "data"))
    try:
        return run(args, tmp)
    except (BenchError, BuildError, OSError, http.client.HTTPException, psycopg.Error) as error:
        print(f"team_bench: FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
