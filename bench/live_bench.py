"""Live dashboard load: latency from a frame's fsync to its update at a browser socket,
and the server's CPU while many idle sessions sit in the home.

Usage: python bench/live_bench.py [--sessions 20] [--clients 10] [--idle 500]
       [--seconds 20] [--idle-seconds 10] [--source LOG]

It starts the real server (Daphne, in-memory channel layer) on 127.0.0.1 over a
temporary home, logs ``--clients`` WebSocket clients in on session pages, and grows
``--sessions`` sessions at DSH's pace: frames of real events (from a real DSH log,
default the benchmark home's, else a fixture) every 50–200 ms, each fsynced. The
baseline, measured in the same run on the same writes, is a bare ``watchfiles`` watcher
noticing each write: what any file-following server pays before doing anything. The
idle phase compares the server's CPU with ``--idle`` idle sessions to a second server
on an empty home. Every loop is bounded in count and time. Ends with one line
``p50_ms=<a> p95_ms=<b> max_ms=<c> idle_cpu_pct=<d>``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.cookiejar
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import websockets
import zstandard
from watchfiles import watch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dshweb.core.frames import split_frames  # noqa: E402
from dshweb.core.home import session_logs  # noqa: E402
from dshweb.live.timing import INTERVAL  # noqa: E402

USER, PASSWORD = "bench", "bench-password-not-secret"
LAST_SEQ = re.compile(rb"last seq (\d+)")
_compress = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compress


def _source_log(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    for home in (REPO / "bench/data/big-home", REPO / "tests/fixtures/homes/auto-compact"):
        if (home / "sessions").is_dir():
            return session_logs(home)[0].path
    sys.exit("no source log: pass --source or run tests/fixtures/regenerate.py --big 10000")


def _frames(log: Path) -> list[tuple[bytes, int]]:
    """(frame bytes, last seq in it) for every frame of a real log."""
    data = log.read_bytes()
    chunks, error = split_frames(data, 0)
    assert error is None
    out = []
    last = -1
    for chunk in chunks:
        for line in chunk.text.splitlines():
            seq = json.loads(line).get("seq")
            last = seq if isinstance(seq, int) else last
        out.append((data[chunk.offset : chunk.end], last))
    return out


def _with_id(header_frame: bytes, session_id: str) -> bytes:
    line = json.loads(zstandard.ZstdDecompressor().decompressobj().decompress(header_frame))
    line["id"] = session_id
    return _compress(json.dumps(line, separators=(",", ":")).encode() + b"\n")


def _session_dir(home: Path, session_id: str) -> Path:
    folder = home / "sessions" / "--bench--" / session_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "session.lock").touch()
    return folder / "session.v4.jsonl.zstd"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    home: Path
    data: Path
    port: int = field(default_factory=_free_port)
    proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "DSH_HOME": str(self.home),
            "DSHWEB_DATA_DIR": str(self.data),
            "DSHWEB_NO_DEMO": "1",
            "DJANGO_SUPERUSER_USERNAME": USER,
            "DJANGO_SUPERUSER_PASSWORD": PASSWORD,
            "DJANGO_SUPERUSER_EMAIL": "b@example.com",
        }

    def start(self) -> None:
        manage = [sys.executable, str(REPO / "manage.py")]
        subprocess.run([*manage, "migrate", "--noinput", "-v0"], env=self.env(), check=True)
        subprocess.run(
            [*manage, "createsuperuser", "--noinput"],
            env=self.env(),
            check=True,
            capture_output=True,
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "dshweb.asgi:application",
            ],
            cwd=REPO,
            env=self.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/accounts/login/", timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        sys.exit("the server did not start")

    def login(self) -> str:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        url = f"http://127.0.0.1:{self.port}/accounts/login/"
        opener.open(url, timeout=10)
        token = next(c.value for c in jar if c.name == "csrftoken")
        body = urllib.parse.urlencode(
            {"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": token}
        ).encode()
        opener.open(urllib.request.Request(url, body, headers={"Referer": url}), timeout=10)
        return next(str(c.value) for c in jar if c.name == "sessionid")

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                print("the server did not stop on SIGTERM and was killed")


@dataclass
class Ledger:
    """Frames written per session: (last seq, fsync time), and the latencies found."""

    written: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    history: dict[str, list[float]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arrived(self, session_id: str, last_seq: int, at: float) -> None:
        with self.lock:
            pending = self.written.get(session_id, [])
            done = [t for seq, t in pending if seq <= last_seq]
            self.written[session_id] = [(s, t) for s, t in pending if s > last_seq]
            self.latencies.extend(at - t for t in done)


def _grow(
    paths: dict[str, Path],
    frames: list[tuple[bytes, int]],
    start: int,
    ledger: Ledger,
    seconds: float,
    stop: threading.Event,
    seen: dict[Path, float],
) -> int:
    """Append frames to every session at 50–200 ms intervals until time is up."""
    rng = random.Random(7)
    due = {sid: time.monotonic() + rng.uniform(0.05, 0.2) for sid in paths}
    cursor = dict.fromkeys(paths, start)
    end = time.monotonic() + seconds
    writes = 0
    while time.monotonic() < end and not stop.is_set():
        sid = min(due, key=due.__getitem__)
        time.sleep(max(0.0, due[sid] - time.monotonic()))
        if cursor[sid] >= len(frames):
            due[sid] = float("inf")
            continue
        frame, last_seq = frames[cursor[sid]]
        cursor[sid] += 1
        with paths[sid].open("ab") as handle:
            handle.write(frame)
            handle.flush()
            os.fsync(handle.fileno())
        now = time.monotonic()
        with ledger.lock:
            ledger.written.setdefault(sid, []).append((last_seq, now))
            ledger.history.setdefault(sid, []).append(now)
            seen[paths[sid]] = now
        writes += 1
        due[sid] = now + rng.uniform(0.05, 0.2)
    return writes


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


async def _client(port: int, cookie: str, session_id: str, ledger: Ledger, until: float) -> int:
    url = f"ws://127.0.0.1:{port}/ws/sessions/{urllib.parse.quote(session_id)}/"
    headers = {"Cookie": f"sessionid={cookie}", "Origin": f"http://127.0.0.1:{port}"}
    updates = 0
    async with websockets.connect(url, additional_headers=headers, max_size=2**24) as ws:
        while time.monotonic() < until:
            try:
                message = await asyncio.wait_for(ws.recv(), timeout=until - time.monotonic())
            except TimeoutError:
                break
            at = time.monotonic()
            data = message.encode() if isinstance(message, str) else message
            found = LAST_SEQ.search(data)
            if found:
                ledger.arrived(session_id, int(found.group(1)), at)
                updates += 1
    return updates


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


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--idle", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--source", type=Path)
    args = parser.parse_args()
    frames = _frames(_source_log(args.source))
    start = min(len(frames) // 2, 40)
    tmp = Path(tempfile.mkdtemp(prefix="dshweb-live-bench-"))
    servers: list[Server] = []
    try:
        home, empty = tmp / "home", tmp / "empty-home"
        (empty / "sessions").mkdir(parents=True)
        growing = {
            f"grow-{i:02d}": _session_dir(home, f"grow-{i:02d}") for i in range(args.sessions)
        }
        for sid, path in growing.items():
            path.write_bytes(_with_id(frames[0][0], sid) + b"".join(f for f, _ in frames[1:start]))
        small = frames[: min(len(frames), 12)]
        for i in range(args.idle):
            sid = f"idle-{i:04d}"
            _session_dir(home, sid).write_bytes(
                _with_id(small[0][0], sid) + b"".join(f for f, _ in small[1:])
            )
        server, quiet = Server(home, tmp / "data"), Server(empty, tmp / "data-empty")
        servers += [server, quiet]
        server.start()
        quiet.start()
        cookie = server.login()
        ledger, stop = Ledger(), threading.Event()
        seen: dict[Path, float] = {}
        watcher = threading.Thread(
            target=_baseline_watch, args=(home, ledger, seen, stop), daemon=True
        )
        watcher.start()
        time.sleep(1.0)
        observed = list(growing)[: args.clients]
        until = time.monotonic() + args.seconds + 3

        async def all_clients() -> list[int]:
            return list(
                await asyncio.gather(
                    *(_client(server.port, cookie, sid, ledger, until) for sid in observed)
                )
            )

        writes: list[int] = []
        writer = threading.Thread(
            target=lambda: writes.append(
                _grow(growing, frames, start, ledger, args.seconds, stop, seen)
            ),
            daemon=True,
        )
        writer.start()
        updates = asyncio.run(all_clients())
        writer.join()
        print(
            f"{sum(writes)} frames written; {sum(updates)} updates received "
            f"by {len(observed)} clients"
        )

        time.sleep(2.0)
        cpu0, quiet0, t0 = server.cpu_seconds(), quiet.cpu_seconds(), time.monotonic()
        time.sleep(args.idle_seconds)
        elapsed = time.monotonic() - t0
        idle_pct = (server.cpu_seconds() - cpu0) / elapsed * 100
        empty_pct = (quiet.cpu_seconds() - quiet0) / elapsed * 100
        stop.set()
        watcher.join(timeout=5)
        server.stop()
        quiet.stop()

        lat = ledger.latencies
        base = ledger.baseline
        if not lat:
            sys.exit("no latency measured")
        p50, p95, top = statistics.median(lat) * 1000, _pct(lat, 0.95), max(lat) * 1000
        b50, b95 = statistics.median(base) * 1000, _pct(base, 0.95)
        print(
            f"fsync → update at client ({len(lat)} frames): p50 {p50:.1f} ms, "
            f"p95 {p95:.1f} ms, max {top:.1f} ms"
        )
        print(
            f"baseline fsync → bare watchfiles ({len(base)} writes): p50 {b50:.1f} ms, "
            f"p95 {b95:.1f} ms; ratio p50 {p50 / max(b50, 0.001):.1f}x, "
            f"p95 {p95 / max(b95, 0.001):.1f}x"
        )
        floor = [
            x for sid in observed for x in _coalescing_floor(ledger.history.get(sid, []), INTERVAL)
        ]
        f50, f95 = statistics.median(floor) * 1000, _pct(floor, 0.95)
        print(
            f"floor of {1 / INTERVAL:.0f} updates/s/session at this pace: p50 {f50:.1f} ms, "
            f"p95 {f95:.1f} ms; ratio p50 {p50 / max(f50, 0.001):.2f}x, "
            f"p95 {p95 / max(f95, 0.001):.2f}x"
        )
        print(
            f"idle CPU with {args.idle + args.sessions} sessions: {idle_pct:.2f}% of one core "
            f"(empty home: {empty_pct:.2f}%; ratio {idle_pct / max(empty_pct, 0.01):.1f}x)"
        )
        print(f"p50_ms={p50:.1f} p95_ms={p95:.1f} max_ms={top:.1f} idle_cpu_pct={idle_pct:.2f}")
    finally:
        for each in servers:
            each.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
