"""Does a home of 5,000 sessions serve as fast as one of 100? (issue 10)

Usage: python bench/scale_bench.py [--sizes 100,1000,5000] [--requests 40]
       [--idle-seconds 20] [--timeout 600] [--ws-timeout 120] [--big-copies 3]
       [--server-tree DIR] [--keep]

For each size it builds (or reuses) ``bench/data/scale-<n>/`` with
:mod:`scale_home` (copies of the repository's real DSH fixture logs plus a few copies
of a big session), then starts the real server as ``scripts/start`` does
(:mod:`bench_server`) on a fresh data folder and measures, client-side on loopback:

- ``cold_s``: daphne's start to the first *complete* ``/``. A server that folds in the
  background answers ``GET /progress/`` with ``data-state="folding"`` or ``"done"``;
  only a ``/`` requested after ``done`` counts. A server without that page (404) is
  complete at its first 200 ``/``. ``first_page_s``: start to the first 200 ``/`` of
  any kind. Both include sign-in and the poll's granularity (a ``/`` or
  ``/progress/`` every 0.2 s, one request at a time). ``boot_s``: start to the login
  page's first answer (Python, Django and Daphne starting: the floor of both).
- ``list_p95_ms`` / ``detail_p95_ms``: ``--requests`` sequential warm GETs of ``/`` and
  of session pages (one in four on a big copy, the rest random small ones), each on a
  fresh connection, once the server has settled (its CPU under 5% of a core for 1 s:
  the first checkpoint flush and full round after a start are done; the wait is printed);
  p50/p95 in ms, and the server's own time when it sends ``Server-Timing``.
  ``list_html_kb``: the size of ``/``.
- ``max_ws_kb``: the first message of the sessions-list socket (``/ws/sessions/``) and
  of a big session's socket, opened as the server's own page would open them; a socket
  that closes or stays silent is named in ``ws_list`` / ``ws_session``.
- ``rss_mb`` after the warm requests; ``idle_cpu_pct``: the server's CPU (utime +
  stime) over ``--idle-seconds`` with no request and no socket open.
- ``restart_s``: SIGTERM, wait, start again on the same data folder and home: start
  to the first complete ``/``, measured as ``cold_s``; ``restart_ratio``: over ``cold_s``.
- ``one_core_cold_s``: the cold start again, on a fresh data folder, with the fold in
  the server's own process alone (``DSHWEB_FOLD_PROCESSES=1``); ``every_core_ratio``:
  ``cold_s`` (a big home's read spread over every core, :mod:`dshweb.core.fold.spread`)
  over it.

The first size (100 unless ``--baseline`` says otherwise; added when missing) is the
baseline of ``list_ratio`` and ``detail_ratio`` (p95 over the baseline's p95), measured
in the same run. One line per size::

  size=5000 sessions=5000 json_mb=... list_p95_ms=... detail_p95_ms=... idle_cpu_pct=...
  list_server_p95_ms=... detail_server_p95_ms=... restart_s=... cold_s=...
  one_core_cold_s=... every_core_ratio=... restart_ratio=... first_page_s=...
  boot_s=... rss_mb=... list_html_kb=... max_ws_kb=...
  list_ratio=... detail_ratio=... ws_list=ok ws_session=ok

Exit status: 1 when the benchmark did less than it claims (a home with fewer sessions,
fewer samples, a page that was not 200, a server that never came up or never finished
its fold within ``--timeout``); 3 when everything was measured but a socket never
delivered its first message (reported in its line, not hidden).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_server import (
    REPO,
    BenchError,
    FirstMessage,
    Response,
    Server,
    first_message,
    percentile,
    wait_complete,
)
from scale_home import BuildError, big_source, build_home

ROW = re.compile(rb'data-session-id="')
WARMUP = 3
SETTLE_S = 3.0


def timed(server: Server, paths: list[str], timeout: float, what: str) -> list[Response]:
    got = [server.get(path, timeout=timeout) for path in paths]
    bad = [(p, r.status) for p, r in zip(paths, got, strict=True) if r.status != 200]
    if bad:
        raise server.fail(f"{len(bad)} of {len(paths)} {what} requests were not 200: {bad[:5]}")
    return got


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def summary(label: str, got: list[Response]) -> tuple[float, float, float | None, str]:
    """p50 and p95 in ms at the client, the server's own p95 (``Server-Timing``, None
    unless every response carried it), and a line saying so."""
    ms = [r.seconds * 1000 for r in got]
    p50, p95 = statistics.median(ms), percentile(ms, 0.95)
    server = [s for r in got if (s := r.server_ms()) is not None]
    server_p95 = percentile(server, 0.95) if len(server) == len(got) else None
    told = (
        f"server p50 {statistics.median(server):.1f} ms p95 {server_p95:.1f} ms"
        if server_p95 is not None
        else f"no Server-Timing ({len(server)} of {len(got)})"
    )
    text = f"{label}: {len(got)} requests, p50 {p50:.1f} ms, p95 {p95:.1f} ms, {told}"
    return p50, p95, server_p95, text


@dataclass(slots=True)
class Result:
    size: int
    sessions: int
    json_mb: float
    list_p95: float
    detail_p95: float
    list_server_p95: float | None
    detail_server_p95: float | None
    idle_cpu: float
    restart_s: float
    cold_s: float
    one_core_s: float
    first_page_s: float
    boot_s: float
    rss_mb: float
    list_html_kb: float
    max_ws_kb: float
    sockets: tuple[FirstMessage, FirstMessage]

    def line(self, base: Result) -> str:
        ws_list, ws_session = self.sockets
        return (
            f"size={self.size} sessions={self.sessions} json_mb={self.json_mb:.1f} "
            f"list_p95_ms={self.list_p95:.1f} detail_p95_ms={self.detail_p95:.1f} "
            f"list_server_p95_ms={_ms(self.list_server_p95)} "
            f"detail_server_p95_ms={_ms(self.detail_server_p95)} "
            f"idle_cpu_pct={self.idle_cpu:.2f} restart_s={self.restart_s:.2f} "
            f"cold_s={self.cold_s:.2f} one_core_cold_s={self.one_core_s:.2f} "
            f"every_core_ratio={self.cold_s / self.one_core_s:.2f} "
            f"restart_ratio={self.restart_s / self.cold_s:.2f} "
            f"first_page_s={self.first_page_s:.2f} "
            f"boot_s={self.boot_s:.2f} "
            f"rss_mb={self.rss_mb:.0f} list_html_kb={self.list_html_kb:.0f} "
            f"max_ws_kb={self.max_ws_kb:.0f} "
            f"list_ratio={self.list_p95 / base.list_p95:.2f} "
            f"detail_ratio={self.detail_p95 / base.detail_p95:.2f} "
            f"ws_list={ws_list.outcome} ws_session={ws_session.outcome}"
        )


SETTLE_WINDOW = 1.0
SETTLE_CPU_PCT = 5.0
SETTLE_TIMEOUT = 120.0


def settle(server: Server, deadline: float) -> float:
    """Wait until the server's CPU stays under :data:`SETTLE_CPU_PCT` of a core for a
    :data:`SETTLE_WINDOW`: what a start leaves to do in the background (the first
    checkpoint flush of every session, the first full round) is done, so the warm requests
    measure a request, not a request beside that. Returns the seconds waited."""
    started = time.monotonic()
    while True:
        cpu0, t0 = server.cpu_seconds(), time.monotonic()
        time.sleep(SETTLE_WINDOW)
        busy = (server.cpu_seconds() - cpu0) / (time.monotonic() - t0) * 100
        if busy < SETTLE_CPU_PCT:
            return time.monotonic() - started
        if time.monotonic() > deadline:
            raise server.fail(f"still {busy:.0f}% busy {SETTLE_TIMEOUT:g} s after its start")


def measure(size: int, args: argparse.Namespace, tmp: Path) -> Result:
    built = build_home(size, big_copies=args.big_copies, big=args.big)
    ids, big = built.ids, built.big_ids
    if len(ids) != size or len(set(ids)) != size:
        raise BenchError(f"the home of size {size} holds {len(set(ids))} distinct sessions")
    small = [i for i in ids if i not in big]
    json_mb = built.json_bytes / 1e6
    print(
        f"== size {size}: {built.path} ({json_mb:.1f} MB of JSON; big: {len(big)} copies of "
        f"{built.big_source}, {built.big_json_bytes / 1e6:.2f} MB of JSON each)",
        flush=True,
    )
    server = Server(built.path, tmp / f"data-{size}", tree=args.server_tree)
    prepared = time.monotonic()
    server.prepare()
    print(f"   prepared (migrate, collectstatic, users) in {time.monotonic() - prepared:.1f} s")
    try:
        server.start()
        cold = wait_complete(server, time.monotonic() + args.timeout)
        print(
            f"   cold: answering {cold.boot_s:.2f} s, first page {cold.first_page_s:.2f} s, "
            f"complete {cold.complete_s:.2f} s "
            f"(progress page: {cold.progress})",
            flush=True,
        )
        rng = random.Random(size)
        detail_paths = [
            f"/homes/local/sessions/{big[i // 4 % len(big)] if i % 4 == 0 else rng.choice(small)}/"
            for i in range(args.requests)
        ]
        timed(server, ["/"] * WARMUP + detail_paths[:WARMUP], args.request_timeout, "warm-up")
        settled = settle(server, time.monotonic() + SETTLE_TIMEOUT)
        print(
            f"   settled {settled:.1f} s after the warm-up (the hub's first checkpoint flush "
            f"and full round: under {SETTLE_CPU_PCT:g}% of a core for {SETTLE_WINDOW:g} s)",
            flush=True,
        )
        listed = timed(server, ["/"] * args.requests, args.request_timeout, "list")
        detail = timed(server, detail_paths, args.request_timeout, "detail")
        if len(listed) != args.requests or len(detail) != args.requests:
            raise BenchError(f"{len(listed)} list and {len(detail)} detail samples")
        _, list_p95, list_server_p95, text = summary("   list /", listed)
        print(text)
        _, detail_p95, detail_server_p95, text = summary("   session pages", detail)
        print(text)
        bigs = [r for p, r in zip(detail_paths, detail, strict=True) if "/big-" in p]
        print(summary("   of which big", bigs)[3])
        html = listed[-1].body
        rows = len(ROW.findall(html))
        print(f"   / is {len(html) / 1024:.0f} kB with {rows} rows for {size} sessions")
        if rows < size:
            print(f"   NOTE: the list shows {rows} of {size} sessions")
        rss = server.rss_mb()

        async def sockets() -> tuple[FirstMessage, FirstMessage]:
            listing = await first_message(server, "/ws/sessions/", args.ws_timeout)
            one = await first_message(
                server, f"/ws/homes/local/sessions/{big[0]}/", args.ws_timeout
            )
            return listing, one

        probes = asyncio.run(sockets())
        for probe in probes:
            size_kb = "-" if probe.size is None else f"{probe.size / 1024:.0f} kB"
            print(f"   socket {probe.path}: {probe.outcome}, {size_kb}, {probe.seconds:.2f} s")
        max_ws = max((p.size or 0) for p in probes) / 1024

        time.sleep(SETTLE_S)
        cpu0, t0 = server.cpu_seconds(), time.monotonic()
        time.sleep(args.idle_seconds)
        idle = (server.cpu_seconds() - cpu0) / (time.monotonic() - t0) * 100
        print(f"   idle {args.idle_seconds:.0f} s: {idle:.2f}% of one core; RSS {rss:.0f} MB")

        stopped = server.stop()
        server.start()
        again = wait_complete(server, time.monotonic() + args.timeout)
        print(
            f"   restart: stopped in {stopped:.2f} s; first page {again.first_page_s:.2f} s, "
            f"complete {again.complete_s:.2f} s",
            flush=True,
        )
    finally:
        server.stop()
    # The baseline of every_core_ratio, in the same run: the same cold start folded by the
    # server's own process alone (DSHWEB_FOLD_PROCESSES=1), on a data folder of its own.
    alone = Server(built.path, tmp / f"data-{size}-one-core", tree=args.server_tree)
    alone.extra_env["DSHWEB_FOLD_PROCESSES"] = "1"
    alone.prepare()
    try:
        alone.start()
        one_core = wait_complete(alone, time.monotonic() + args.timeout)
    finally:
        alone.stop()
    print(
        f"   one core: complete {one_core.complete_s:.2f} s (every core: {cold.complete_s:.2f} s)",
        flush=True,
    )
    return Result(
        size=size,
        sessions=len(ids),
        json_mb=json_mb,
        list_p95=list_p95,
        detail_p95=detail_p95,
        list_server_p95=list_server_p95,
        detail_server_p95=detail_server_p95,
        idle_cpu=idle,
        restart_s=again.complete_s,
        cold_s=cold.complete_s,
        one_core_s=one_core.complete_s,
        first_page_s=cold.first_page_s,
        boot_s=cold.boot_s,
        rss_mb=rss,
        list_html_kb=len(html) / 1024,
        max_ws_kb=max_ws,
        sockets=probes,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--baseline", type=int, default=100)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=600.0, help="cold start / restart")
    parser.add_argument("--request-timeout", type=float, default=120.0)
    parser.add_argument("--ws-timeout", type=float, default=120.0)
    parser.add_argument("--big-copies", type=int, default=3)
    parser.add_argument("--server-tree", type=Path, default=REPO)
    parser.add_argument("--keep", action="store_true", help="keep the data folders")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()} | {args.baseline})
    sizes.remove(args.baseline)
    sizes.insert(0, args.baseline)
    if args.requests < 20:
        parser.error("--requests below 20 gives no p95 worth the name")
    if not (args.server_tree / "dshweb" / "asgi.py").is_file():
        parser.error(f"{args.server_tree} is not a dshweb source tree")
    args.big = big_source()
    print(
        f"scale_bench: sizes {sizes}, server from {args.server_tree}, big session {args.big}",
        flush=True,
    )
    tmp = Path(tempfile.mkdtemp(prefix="dshweb-scale-bench-"))
    results: list[Result] = []
    try:
        for size in sizes:
            results.append(measure(size, args, tmp))
            print(results[-1].line(results[0]), flush=True)
    except (BenchError, BuildError, OSError, http.client.HTTPException) as error:
        print(f"scale_bench: FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"data folders kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("== summary")
    for result in results:
        print(result.line(results[0]))
    silent = [
        f"size={r.size} {p.path}: {p.outcome}" for r in results for p in r.sockets if p.failure
    ]
    if silent:
        print(f"scale_bench: sockets that never sent their first message: {'; '.join(silent)}")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
