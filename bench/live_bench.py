"""Live dashboard load: latency from a frame's fsync to its update at a browser socket,
inside a home of many idle sessions, and the server's CPU while they sit idle.

Usage: python bench/live_bench.py [--sessions 20] [--clients 10] [--list-clients 1]
       [--home-size 500] [--seconds 20] [--idle-seconds 10] [--source LOG]
       [--timeout 600] [--ws-timeout 120] [--server-tree DIR]

It starts the real server (:mod:`bench_server`, as ``scripts/start`` does) on a home of
``--home-size`` idle sessions (:mod:`scale_home`'s cached home, hard-linked: nothing
of it is written) plus ``--sessions`` growing ones, waits for its first complete page,
opens ``--clients`` session sockets (one per growing session) and ``--list-clients``
sessions-list sockets, and only when every socket has its on-connect state grows the
sessions at DSH's pace: a frame of real events every 50–200 ms each, fsynced, for the
whole ``--seconds``. The frames come from a real DSH log (``--source``; default the
benchmark home's big session, else a fixture): after the source's second half, its
frames are written again with every ``seq`` (and ``*Seq``/``*Seqs`` reference) moved
past the last one written and every id made new, so a session never runs out; each
grown log is folded again at the end and must read without error up to the last seq
written.

The feed is :mod:`growth`'s, the sockets :mod:`live_sockets`'. A socket's on-connect
message is the state, not an update: it is never counted as one. An update resolves
every frame of its session up to the ``last seq N`` it shows. A socket the server
closes is opened again after a full-jitter back-off (as htmx's ws extension does);
the state it then sends resolves pending frames without a latency (``resynced``).
The baseline, on the same writes, is a bare ``watchfiles`` watcher noticing each
write; the floor is a server that publishes at once but at most once per the server's
``INTERVAL``. The idle phase compares the server's CPU with a second server on an
empty home.

It prints what it did (frames written per session and the time they span, updates,
on-connect states, resynced frames, reconnects, the largest message) and ends with
``p50_ms=<a> p95_ms=<b> max_ms=<c> idle_cpu_pct=<d> frames=<n> updates=<u>
list_updates=<l> max_ws_kb=<k> reconnects=<r>``. Exit status 1 when it did less than
it claims (a session that stopped writing early, no latency measured, a grown log that
does not fold); 3 when a socket never sent its first state or frames were never
delivered (reported, not hidden).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import random
import runpy
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_server import REPO, BenchError, Server, percentile, wait_complete
from growth import Feed, read_frames, session_log, source_log, with_id
from live_sockets import Client, Ledger
from scale_home import PROFILES, BuildError, build_home
from watchfiles import watch

from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import LogFile, session_logs

DRAIN_S = 5.0
PACE = (0.05, 0.2)


def _link_tree(source: Path, target: Path) -> None:
    """A copy of ``source`` whose files are hard links (never written), else copies."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link)


def _grow(
    paths: dict[str, Path],
    feed: Feed,
    ledger: Ledger,
    seconds: float,
    stop: threading.Event,
    seen: dict[Path, float],
) -> dict[str, list[float]]:
    """Append a frame to every session every 50–200 ms until the window ends."""
    rng = random.Random(7)
    frames = {sid: feed.frames() for sid in paths}
    end = time.monotonic() + seconds
    due = {sid: time.monotonic() + rng.uniform(*PACE) for sid in paths}
    times: dict[str, list[float]] = {sid: [] for sid in paths}
    while not stop.is_set():
        sid = min(due, key=due.__getitem__)
        if due[sid] >= end:
            break
        time.sleep(max(0.0, due[sid] - time.monotonic()))
        frame = next(frames[sid])
        with paths[sid].open("ab") as handle:
            handle.write(frame.data)
            handle.flush()
            os.fsync(handle.fileno())
        now = time.monotonic()
        ledger.wrote(sid, frame.last_seq, now)
        with ledger.lock:
            seen[paths[sid]] = now
        times[sid].append(now)
        due[sid] = now + rng.uniform(*PACE)
    return times


def _baseline_watch(
    home: Path, ledger: Ledger, seen: dict[Path, float], stop: threading.Event
) -> None:
    for changes in watch(
        home / "sessions", stop_event=stop, step=1, rust_timeout=100, yield_on_timeout=True
    ):
        now = time.monotonic()
        for _, path in changes:
            with ledger.lock:
                written = seen.pop(Path(path), None)
            if written is not None:
                ledger.baseline.append(now - written)


def _coalescing_floor(writes: list[float], interval: float) -> list[float]:
    """Latencies of an ideal server that publishes at once but at most once per
    ``interval``: what the coalescing alone costs at this write pace."""
    latencies: list[float] = []
    sent = float("-inf")
    i = 0
    while i < len(writes):
        publish = max(writes[i], sent + interval)
        while i < len(writes) and writes[i] <= publish:
            latencies.append(publish - writes[i])
            i += 1
        sent = publish
    return latencies


def _check_grown(paths: dict[str, Path], ledger: Ledger) -> None:
    """Each grown log folds without error up to the last seq written to it."""
    for sid, path in paths.items():
        tracker = SessionTracker(LogFile(path, 4, compressed=True))
        tracker.refresh()
        if tracker.error is not None:
            raise BenchError(f"{sid}: the grown log reads with an error: {tracker.error}")
        if tracker.meter.last_seq != ledger.last_seq.get(sid):
            raise BenchError(
                f"{sid}: folds to seq {tracker.meter.last_seq}, {ledger.last_seq.get(sid)} written"
            )


def _ms(values: list[float]) -> tuple[float, float, float]:
    return (
        statistics.median(values) * 1000,
        percentile(values, 0.95) * 1000,
        max(values) * 1000,
    )


def run(args: argparse.Namespace, tmp: Path) -> int:
    frames = read_frames(source_log(args.source))
    start = min(len(frames) // 2, 40)
    feed = Feed(frames, start)
    interval = float(runpy.run_path(str(args.server_tree / "dshweb/live/timing.py"))["INTERVAL"])
    home, empty = tmp / "home", tmp / "empty-home"
    (empty / "sessions").mkdir(parents=True)
    if args.home_size > 0:
        built = build_home(args.home_size)
        _link_tree(built.path / "sessions", home / "sessions")
        idle_count = len(session_logs(home))
        if idle_count != args.home_size:
            raise BenchError(f"the home holds {idle_count} idle sessions, {args.home_size} asked")
    shutil.copytree(PROFILES, home / "profiles")
    growing = {f"grow-{i:02d}": session_log(home, f"grow-{i:02d}") for i in range(args.sessions)}
    for sid, path in growing.items():
        path.write_bytes(with_id(frames[0].data, sid) + b"".join(f.data for f in frames[1:start]))
    print(
        f"home: {args.home_size} idle + {args.sessions} growing sessions; source "
        f"{args.source or source_log(None)} ({len(frames)} frames; growth from frame {start}, "
        f"cycled every {len(feed.unit)} frames, seqs moved by {feed.span} per cycle)",
        flush=True,
    )
    server = Server(home, tmp / "data", tree=args.server_tree)
    quiet = Server(empty, tmp / "data-empty", tree=args.server_tree)
    try:
        for each in (server, quiet):
            each.prepare()
        for each in (server, quiet):
            each.start()
        cold = wait_complete(server, time.monotonic() + args.timeout)
        wait_complete(quiet, time.monotonic() + args.timeout)
        print(f"server: first complete page {cold.complete_s:.1f} s after its start", flush=True)
        return _measure(args, server, quiet, growing, feed, interval)
    finally:
        server.stop()
        quiet.stop()


def _measure(
    args: argparse.Namespace,
    server: Server,
    quiet: Server,
    growing: dict[str, Path],
    feed: Feed,
    interval: float,
) -> int:
    ledger, stop = Ledger(), threading.Event()
    seen: dict[Path, float] = {}
    watcher = threading.Thread(
        target=_baseline_watch, args=(server.home, ledger, seen, stop), daemon=True
    )
    watcher.start()
    observed = list(growing)[: args.clients]
    rng = random.Random(11)
    sessions = [Client(server, ledger, sid, random.Random(rng.random())) for sid in observed]
    lists = [Client(server, ledger, None, random.Random(rng.random())) for _ in range(args.lists)]
    everyone = sessions + lists
    times: dict[str, list[float]] = {}

    async def clients() -> float:
        await asyncio.gather(*(c.open(args.ws_timeout) for c in everyone))
        await asyncio.sleep(1.0)  # the baseline watcher is up
        writer = threading.Thread(
            target=lambda: times.update(_grow(growing, feed, ledger, args.seconds, stop, seen)),
            daemon=True,
        )
        began = time.monotonic()
        writer.start()
        until = began + args.seconds + DRAIN_S
        await asyncio.gather(*(c.follow(until, args.ws_timeout) for c in everyone))
        await asyncio.to_thread(writer.join, args.seconds + 30)
        for each in everyone:
            await each.close()
        return began

    began = asyncio.run(clients())
    if len(times) != len(growing):
        raise BenchError("the writer did not finish its window")
    _check_grown(growing, ledger)

    time.sleep(2.0)
    cpu0, quiet0, t0 = server.cpu_seconds(), quiet.cpu_seconds(), time.monotonic()
    time.sleep(args.idle_seconds)
    elapsed = time.monotonic() - t0
    idle_pct = (server.cpu_seconds() - cpu0) / elapsed * 100
    empty_pct = (quiet.cpu_seconds() - quiet0) / elapsed * 100
    stop.set()
    watcher.join(timeout=5)

    written = {sid: len(t) for sid, t in times.items()}
    spans = {sid: (t[-1] - began if t else 0.0) for sid, t in times.items()}
    frames = sum(written.values())
    updates = sum(c.updates for c in sessions)
    list_updates = sum(c.updates for c in lists)
    reconnects = sum(c.reconnects for c in everyone)
    max_kb = max((c.max_size for c in everyone), default=0) / 1024
    undelivered = ledger.pending(observed)
    print(
        f"wrote {frames} frames to {len(growing)} sessions over {args.seconds:.0f} s "
        f"(per session {min(written.values())}–{max(written.values())} frames, the last "
        f"{min(spans.values()):.1f}–{max(spans.values()):.1f} s into the window)"
    )
    print(
        f"{len(sessions)} session sockets: {updates} updates (+ {sum(c.states for c in sessions)}"
        f" on-connect states, not counted), {sum(c.unmatched for c in sessions)} without a "
        f"'last seq'; frames resolved by an update {len(ledger.latencies)}, by a reconnect's "
        f"state {ledger.resynced}, never delivered {undelivered}"
    )
    for c in lists:
        first = "none" if c.first_size is None else f"{c.first_size / 1024:.0f} kB"
        print(
            f"list socket: first state {first}{'' if c.failure is None else ' — ' + c.failure}"
            f", {c.updates} updates after it"
        )
    print(f"reconnect attempts {reconnects}; largest WebSocket message {max_kb:.0f} kB")

    failures: list[str] = []
    short = [sid for sid, s in spans.items() if s < args.seconds - 1.0]
    if short:
        raise BenchError(f"{len(short)} sessions stopped writing early: {short[:5]}")
    if not ledger.latencies:
        raise BenchError("no latency measured: no update matched a written frame")
    silent = [c.path for c in everyone if c.states == 0]
    if silent:
        failures.append(f"{len(silent)} sockets never sent their state: {silent[:5]}")
    if undelivered:
        failures.append(f"{undelivered} frames never reached their session's socket")

    lat, base = ledger.latencies, ledger.baseline
    p50, p95, top = _ms(lat)
    print(
        f"fsync → update at client ({len(lat)} frames): p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
        f"max {top:.1f} ms"
    )
    if base:
        b50, b95, _ = _ms(base)
        print(
            f"baseline fsync → bare watchfiles ({len(base)} writes): p50 {b50:.1f} ms, "
            f"p95 {b95:.1f} ms; ratio p50 {p50 / max(b50, 0.001):.1f}x, "
            f"p95 {p95 / max(b95, 0.001):.1f}x"
        )
    floor = [
        x for sid in observed for x in _coalescing_floor(ledger.history.get(sid, []), interval)
    ]
    f50, f95, _ = _ms(floor)
    print(
        f"floor of {1 / interval:.0f} updates/s/session at this pace: p50 {f50:.1f} ms, "
        f"p95 {f95:.1f} ms; ratio p50 {p50 / max(f50, 0.001):.2f}x, "
        f"p95 {p95 / max(f95, 0.001):.2f}x"
    )
    print(
        f"idle CPU with {args.home_size + args.sessions} sessions: {idle_pct:.2f}% of one core "
        f"(empty home: {empty_pct:.2f}%; ratio {idle_pct / max(empty_pct, 0.01):.1f}x)"
    )
    print(
        f"p50_ms={p50:.1f} p95_ms={p95:.1f} max_ms={top:.1f} idle_cpu_pct={idle_pct:.2f} "
        f"frames={frames} updates={updates} list_updates={list_updates} "
        f"max_ws_kb={max_kb:.0f} reconnects={reconnects}"
    )
    if failures:
        print("live_bench: " + "; ".join(failures))
        return 3
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--list-clients", dest="lists", type=int, default=1)
    parser.add_argument("--home-size", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--source", type=Path)
    parser.add_argument("--timeout", type=float, default=600.0, help="cold start")
    parser.add_argument("--ws-timeout", type=float, default=120.0)
    parser.add_argument("--server-tree", type=Path, default=REPO)
    args = parser.parse_args()
    if args.clients > args.sessions:
        parser.error("--clients cannot exceed --sessions (one socket per growing session)")
    if args.seconds < 2:
        parser.error("--seconds below 2 measures nothing")
    # Under bench/data (git-ignored), on the cached homes' file system: hard links work.
    (REPO / "bench" / "data").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="live-bench-", dir=REPO / "bench" / "data"))
    try:
        return run(args, tmp)
    except (BenchError, BuildError, OSError, http.client.HTTPException) as error:
        print(f"live_bench: FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
