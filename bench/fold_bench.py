"""Fold speed and memory on a big real session, against floors measured in the same run.

Usage: python bench/fold_bench.py [HOME]   (default: bench/data/big-home, made by
``python bench/make_big_home.py``: one session of 36,000 events recorded by the real DSH
runtime). The machine is shared and noisy, so every figure is a ratio or a difference
against a baseline taken in the same run, each the best of several alternating rounds:

- ``fold_ratio``: the whole fold (meter, ledger, pace) of the biggest session, as
  throughput over the floor "decompress every frame + ``json.loads`` every line";
- ``peak_mb_over_empty``: peak RSS of ``manage.py dsh_snapshot --session ID --json`` on
  that session, minus the same command on an empty home;
- ``startup_s``: wall time of that command on an empty home;
- ``append_ms``: median cost of folding one more appended frame into a tracker that has
  already folded the session's first 10,000 events.

Then the same ``fold_ratio`` per shape: the biggest session of each fixture home in
``tests/fixtures/homes`` (prune-heavy, CJK, big tools, model switches, web sessions, …),
each log folded and parsed enough times a round to take at least
:data:`SHAPE_ROUND_S`, best of :data:`ROUNDS`; and the least of them, by name. A shape
whose session folds with an error, or no fixture home at all, fails the run.

It prints what it did (events, frames, sizes, samples) and exits non-zero when the
session is smaller than it claims to measure.
"""

from __future__ import annotations

import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import zstandard

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dshweb.core.fold.session import SessionTracker  # noqa: E402
from dshweb.core.log.frames import split_frames  # noqa: E402
from dshweb.core.log.home import LogFile, session_logs  # noqa: E402

ROUNDS = 5
MIN_EVENTS = 30_000
APPEND_BASE = 10_000
APPENDS = 200
SHAPES = REPO / "tests" / "fixtures" / "homes"
SHAPE_ROUND_S = 0.05


def _fail(message: str) -> None:
    sys.exit(f"fold_bench: {message}")


def baseline(data: bytes) -> int:
    """Decode every frame and ``json.loads`` every line: the floor any reader pays."""
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    count = 0
    for line in reader.read().split(b"\n"):
        if line:
            json.loads(line)
            count += 1
    return count


def fold(path: Path) -> SessionTracker:
    tracker = SessionTracker(LogFile(path, 4, compressed=True))
    tracker.refresh()
    return tracker


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# The command runs as ``manage.py`` would run it, then reports its own peak RSS (VmHWM):
# a child's ru_maxrss would also count the pages of this big process it was forked from.
_PROBE = """
import runpy, sys
sys.argv = ["manage.py", "dsh_snapshot", *sys.argv[1:]]
try:
    runpy.run_path("manage.py", run_name="__main__")
except SystemExit as done:
    if done.code:
        raise
status = open("/proc/self/status").read()
print(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1], file=sys.stderr)
"""


def command(home: Path, *args: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``manage.py dsh_snapshot --home HOME ARGS --json``."""
    argv = [sys.executable, "-c", _PROBE, "--home", str(home), *args, "--json"]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        _fail(f"dsh_snapshot {' '.join(argv[3:])} exited {done.returncode}: {done.stderr}")
    return wall, int(done.stderr.split()[-1]) / 1024


def main() -> None:
    home = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "bench" / "data" / "big-home"
    logs = [log.path for log in session_logs(home)]
    if not logs:
        _fail(f"no session log under {home}: run bench/make_big_home.py")
    log = max(logs, key=lambda p: p.stat().st_size)
    data = log.read_bytes()
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    raw_mb = len(raw.read()) / 1e6
    lines = baseline(data)
    whole = fold(log)
    events = whole.meter.events
    print(f"log: {log}")
    print(f"  {len(data) / 1e6:.1f} MB zstd, {raw_mb:.1f} MB JSON, {lines} lines, {events} events")
    if events < MIN_EVENTS:
        _fail(f"the session has {events} events; this benchmark needs {MIN_EVENTS}")

    b, f = best_rounds(log, data, times=1)
    ratio = b / f
    print(f"floor decompress + json.loads: best {b:.3f} s of {ROUNDS} ({raw_mb / b:.0f} MB/s)")
    print(f"whole fold:                    best {f:.3f} s of {ROUNDS} ({raw_mb / f:.0f} MB/s)")

    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty-home"
        (empty / "sessions").mkdir(parents=True)
        startup = [command(empty) for _ in range(ROUNDS)]
        session = [command(home, "--session", whole.session_id) for _ in range(3)]
        startup_s = min(w for w, _ in startup)
        empty_mb = min(m for _, m in startup)
        session_mb = min(m for _, m in session)
        print(
            f"dsh_snapshot on an empty home: best {startup_s:.3f} s, peak RSS {empty_mb:.1f} MB "
            f"({ROUNDS} runs); --session {whole.session_id}: best {min(w for w, _ in session):.2f}"
            f" s, peak RSS {session_mb:.1f} MB (3 runs)"
        )

        chunks, error = split_frames(data, 0)
        if error is not None:
            _fail(f"the log does not split into frames: {error}")
        counts = [c.text.count(b"\n") for c in chunks]
        cut = next(i for i in range(len(counts)) if sum(counts[: i + 1]) > APPEND_BASE)
        if cut + APPENDS > len(chunks):
            _fail(f"only {len(chunks) - cut} frames after event {APPEND_BASE}; {APPENDS} needed")
        path = Path(tmp) / "session.v4.jsonl.zstd"
        path.write_bytes(data[: chunks[cut].offset])
        tracker = SessionTracker(LogFile(path, 4, compressed=True))
        tracker.refresh()
        start_events = tracker.meter.events
        costs = []
        for chunk in chunks[cut : cut + APPENDS]:
            with path.open("ab") as handle:
                handle.write(data[chunk.offset : chunk.end])
            costs.append(seconds(tracker.refresh) * 1000)
        if tracker.meter != fold(path).meter:
            _fail("the incrementally folded state differs from a fold of the same bytes")
        appended = tracker.meter.events - start_events
        append_ms = statistics.median(costs)
        print(
            f"append: {APPENDS} frames ({appended} events) onto {start_events} events: median "
            f"{append_ms:.3f} ms, p95 {sorted(costs)[int(APPENDS * 0.95)]:.3f} ms"
        )
    print(
        f"fold_ratio={ratio:.2f} peak_mb_over_empty={session_mb - empty_mb:.1f} "
        f"startup_s={startup_s:.3f} append_ms={append_ms:.3f}"
    )
    least, name = shape_ratios()
    print(f"fold_ratio_least_shape={least:.2f} ({name})")


def shape_ratios() -> tuple[float, str]:
    """``fold_ratio`` on the biggest session of each fixture home; the least, and its home."""
    homes = sorted(h for h in SHAPES.iterdir() if h.is_dir())
    if not homes:
        _fail(f"no fixture home under {SHAPES}")
    print(f"per shape (the biggest session of each of {len(homes)} fixture homes):")
    ratios: dict[str, float] = {}
    for home in homes:
        log = max((log.path for log in session_logs(home)), key=lambda p: p.stat().st_size)
        data = log.read_bytes()
        start = time.perf_counter()
        whole = fold(log)
        once = time.perf_counter() - start
        if whole.error is not None or whole.meter.events == 0:
            _fail(f"{home.name}: the fold of {log} ended in {whole.error or 'no event'}")
        times = max(1, round(SHAPE_ROUND_S / max(once, 1e-4)))
        floor_s, fold_s = best_rounds(log, data, times=times)
        ratios[home.name] = floor_s / fold_s
        print(
            f"  {home.name:<26} {whole.meter.events:>6} events {len(data) / 1e3:>7.0f} kB "
            f"x{times:<4} fold_ratio={ratios[home.name]:.2f}"
        )
    name = min(ratios, key=lambda k: ratios[k])
    return ratios[name], name


def best_rounds(log: Path, data: bytes, *, times: int) -> tuple[float, float]:
    """The best of :data:`ROUNDS` alternating rounds of the floor and of the fold, each
    round ``times`` parses or folds of the log (a small log: enough for a timer to see)."""
    base_t, fold_t = [], []
    for _ in range(ROUNDS):
        base_t.append(seconds(lambda: [baseline(data) for _ in range(times)]))
        fold_t.append(seconds(lambda: [fold(log) for _ in range(times)]))
    return min(base_t), min(fold_t)


if __name__ == "__main__":
    main()
