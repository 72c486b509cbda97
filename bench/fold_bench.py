"""Fold throughput against a decode-only baseline, append cost, and fold-state memory.

Usage: python bench/fold_bench.py [LOG_OR_HOME]   (default: bench/data/big-home, made by
``python tests/fixtures/regenerate.py --big 10000``). Each figure is the best of several
alternating runs, so the ratio compares the two under the same machine load. Ends with
one line ``fold_ratio=<x> append_ms=<y> state_mb=<z>``.
"""

from __future__ import annotations

import gc
import io
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import zstandard

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dshweb.core.frames import split_frames  # noqa: E402
from dshweb.core.home import LogFile, session_logs  # noqa: E402
from dshweb.core.session import SessionTracker  # noqa: E402

ROUNDS = 5
APPENDS = 200


def _biggest_log(target: Path) -> Path:
    if target.is_file():
        return target
    logs = [log.path for log in session_logs(target)]
    if not logs:
        sys.exit(f"no session log under {target}: run tests/fixtures/regenerate.py --big 10000")
    return max(logs, key=lambda p: p.stat().st_size)


def baseline(data: bytes) -> int:
    """Decode every frame and ``json.loads`` every line: the floor any reader pays."""
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    count = 0
    for line in reader.read().split(b"\n"):
        if line:
            json.loads(line)
            count += 1
    return count


def full_fold(path: Path) -> SessionTracker:
    tracker = SessionTracker(LogFile(path, 4, compressed=True))
    tracker.refresh()
    return tracker


def best_of(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "bench" / "data" / "big-home"
    log = _biggest_log(target)
    data = log.read_bytes()
    raw_mb = (
        len(
            zstandard.ZstdDecompressor()
            .stream_reader(io.BytesIO(data), read_across_frames=True)
            .read()
        )
        / 1e6
    )
    lines = baseline(data)
    events = full_fold(log).meter.events

    base_t, fold_t = [], []
    for _ in range(ROUNDS):
        base_t.append(best_of(lambda: baseline(data)))
        fold_t.append(best_of(lambda: full_fold(log)))
    b, f = min(base_t), min(fold_t)
    print(f"log: {log} ({len(data) / 1e6:.2f} MB zstd, {raw_mb:.2f} MB JSON, {events} events)")
    print(f"baseline decode+json.loads: {lines / b:,.0f} lines/s  {raw_mb / b:.1f} MB/s")
    print(f"full fold:                  {events / f:,.0f} events/s {raw_mb / f:.1f} MB/s")
    ratio = b / f
    print(f"fold throughput / baseline: {ratio:.2f}")

    chunks, error = split_frames(data, 0)
    assert error is None
    frames = [data[c.offset : c.end] for c in chunks]
    appended = frames[-APPENDS:]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.v4.jsonl.zstd"
        path.write_bytes(b"".join(frames[: len(frames) - len(appended)]))
        tracker = SessionTracker(LogFile(path, 4, compressed=True))
        tracker.refresh()
        costs = []
        for piece in appended:
            with path.open("ab") as handle:
                handle.write(piece)
            start = time.perf_counter()
            tracker.refresh()
            costs.append((time.perf_counter() - start) * 1000)
        assert tracker.meter == full_fold(log).meter
    per_frame = sum(c.text.count(b"\n") for c in chunks[-APPENDS:]) / len(appended)
    append_ms = statistics.median(costs)
    print(
        f"append one frame (~{per_frame:.1f} events) to the big session: median "
        f"{append_ms:.3f} ms, p95 {sorted(costs)[int(len(costs) * 0.95)]:.3f} ms"
    )

    gc.collect()
    tracemalloc.start()
    tracker = full_fold(log)
    gc.collect()
    state_mb, peak_mb = (v / 1e6 for v in tracemalloc.get_traced_memory())
    tracemalloc.stop()
    print(
        f"fold state kept: {state_mb:.2f} MB ({len(tracker.meter.nodes)} surface nodes); "
        f"peak while folding {peak_mb:.2f} MB"
    )
    print(f"fold_ratio={ratio:.2f} append_ms={append_ms:.3f} state_mb={state_mb:.2f}")


if __name__ == "__main__":
    main()
