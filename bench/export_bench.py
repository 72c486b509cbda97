"""The step export streams: its memory against the rows it sends, on a long real log.

Usage: python bench/export_bench.py [LOG]   (default: the longest session log of
``bench/data/big-home``, written by ``bench/make_big_home.py``; else of the fixture homes)

Measured in the same run, with ``tracemalloc`` (peak bytes allocated while it runs):

- **baseline**: the rows held in one list, as an export that built the file first would
  (``fold_steps`` with ``on_row=list.append``);
- **streamed**: the export as the server sends it (:class:`StepStream`: the fold in its
  own thread, batches through a bounded queue, each batch turned into CSV and dropped).

It prints the events, the steps (rows), the CSV bytes sent, both peaks and
``peak_ratio=`` (streamed over baseline: under 1 when streaming holds less than the rows).
Exit status 1 when the streamed export sent a different number of rows than the baseline
made, or fewer than :data:`MIN_STEPS`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dshweb.settings")
os.environ.setdefault("DSHWEB_DATA_DIR", str(REPO / "bench" / "data" / "export-bench-data"))

import django  # noqa: E402

django.setup()

from dshweb.core.fold.steps import STEP_COLUMNS, StepRow, fold_steps  # noqa: E402
from dshweb.core.log.home import LogFile, session_logs  # noqa: E402
from dshweb.sessions.exports import csv_chunks  # noqa: E402
from dshweb.sessions.step_exports import StepStream  # noqa: E402

MIN_STEPS = 20
T = TypeVar("T")


def longest(home: Path) -> LogFile | None:
    logs = session_logs(home) if (home / "sessions").is_dir() else []
    return max(logs, key=lambda log: log.path.stat().st_size, default=None)


def pick(arg: str | None) -> LogFile:
    if arg:
        path = Path(arg)
        return LogFile(path, 4, path.name.endswith(".zstd"))
    for home in [REPO / "bench" / "data" / "big-home"]:
        if (found := longest(home)) is not None:
            return found
    fixtures = [longest(h) for h in (REPO / "tests" / "fixtures" / "homes").iterdir()]
    return max((f for f in fixtures if f), key=lambda log: log.path.stat().st_size)


def measure(run: Callable[[], T]) -> tuple[int, float, T]:
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, seconds, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="?")
    args = parser.parse_args()
    log = pick(args.log)
    home = log.path.parents[3]

    def baseline() -> list[StepRow]:
        rows: list[StepRow] = []
        fold_steps(log, table=None, on_row=rows.append)
        return rows

    def streamed() -> tuple[int, int]:
        async def send() -> tuple[int, int]:
            stream = StepStream(log, home)
            sent = lines = 0
            async for chunk in csv_chunks(STEP_COLUMNS, stream.batches()):
                sent += len(chunk.encode())
                lines += chunk.count("\r\n")
            return sent, lines - 1

        return asyncio.run(send())

    base_peak, base_seconds, rows = measure(baseline)
    stream_peak, stream_seconds, (sent, lines) = measure(streamed)
    steps = len(rows)
    events = int(rows[-1][1] or 0) + 1 if rows else 0
    print(f"log {log.path} ({log.path.stat().st_size / 1e6:.1f} MB, ~{events} events)")
    print(f"baseline: {steps} rows in a list, peak {base_peak / 1e6:.2f} MB, {base_seconds:.2f} s")
    print(
        f"streamed: {lines} rows, {sent / 1e6:.2f} MB of CSV sent, "
        f"peak {stream_peak / 1e6:.2f} MB, {stream_seconds:.2f} s"
    )
    print(
        f"steps={steps} csv_bytes={sent} base_peak={base_peak} stream_peak={stream_peak} "
        f"peak_ratio={stream_peak / base_peak:.3f}"
    )
    if lines != steps or steps < MIN_STEPS:
        print(
            f"export_bench: streamed {lines} rows, baseline {steps} (need ≥ {MIN_STEPS})",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
