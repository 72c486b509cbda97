"""What the cost page's totals cost as a home grows: cost follows the change, not the home.

Usage: python bench/spend_bench.py [--sizes 100,1000,5000] [--days 60]

Each home is made of sessions whose requests spread over ``--days`` days, several models
and quarter hours, in 20 project folders (:class:`~dshweb.core.fold.cost.SessionCost`
as the fold keeps it: tokens by billing slot). Per home it times, each the median of
many rounds:

- ``scratch``: summing every session's tokens from nothing
  (:meth:`~dshweb.core.listing.spend.HomeSpend.of`), what a page would pay without the
  kept sums (the baseline);
- ``update``: the sums after one session changed (:meth:`HomeSpend.changed`: its old
  tokens off, its new ones on), as the sessions list's tree keeps them;
- ``report``: the cost page's figures right after that change (the changed day and
  project priced again, the rest memoised), and ``cold_report`` with nothing memoised.

It ends with ``update_ratio`` (the biggest home's update over the smallest's: about 1
when an update costs what changed), ``update_over_scratch`` and ``report_over_cold``, both
for the biggest home. Exit status 1 when a home's sums differ from the sums made from
nothing after the updates.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dshweb.core.fold.billing import Slot  # noqa: E402
from dshweb.core.fold.cost import RateBook, SessionCost  # noqa: E402
from dshweb.core.fold.session import SessionSnapshot  # noqa: E402
from dshweb.core.listing.spend import HomeSpend, spend_report  # noqa: E402
from tests.support.snapshots import session_snapshot  # noqa: E402

MODELS = ("deepseek-v4-pro", "deepseek-v4-flash", "mystery-model-9")
TODAY = 739_900
NOW_MS = (TODAY - 719_163) * 86_400_000 + 12 * 3_600_000


def session(rng: random.Random, index: int, days: int) -> SessionSnapshot:
    slots: dict[Slot, tuple[int, int, int, int]] = {}
    start = TODAY - rng.randrange(days)
    for _ in range(rng.randrange(10, 60)):
        slot = (rng.choice(MODELS), "p", False, rng.randrange(96), start + rng.randrange(3))
        slots[slot] = (rng.randrange(5_000), rng.randrange(2_000), rng.randrange(90_000), 0)
    return session_snapshot(
        f"s{index}",
        index,
        path=f"sessions/--project-{index % 20}--/s{index}/session.v4.jsonl.zstd",
        cwd=f"/work/project-{index % 20}",
        cost=SessionCost(requests=tuple(slots.items())),
    )


def grown(shot: SessionSnapshot, rng: random.Random) -> SessionSnapshot:
    """The session after one more request, today."""
    slot: Slot = (MODELS[0], "p", False, rng.randrange(96), TODAY)
    tokens = (rng.randrange(5_000), rng.randrange(2_000), rng.randrange(90_000), 0)
    return replace(shot, cost=SessionCost(requests=(*shot.cost.requests, (slot, tokens))))


def median_us(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e6


def measure(size: int, days: int) -> dict[str, float]:
    rng = random.Random(size)
    shots = [session(rng, i, days) for i in range(size)]
    book = RateBook()
    scratch = median_us(lambda: HomeSpend.of(shots), 5)
    spend = HomeSpend.of(shots)
    spend_report([spend], book, UTC, NOW_MS)  # every day and project priced once
    updates, reports = [], []
    for _ in range(50):
        index = rng.randrange(size)
        new = grown(shots[index], rng)
        began = time.perf_counter()
        spend = spend.changed([shots[index]], [new])
        updates.append(time.perf_counter() - began)
        shots[index] = new
        began = time.perf_counter()
        spend_report([spend], book, UTC, NOW_MS)
        reports.append(time.perf_counter() - began)
    if spend.sums() != HomeSpend.of(shots).sums():
        sys.exit(f"spend_bench: the kept sums of {size} sessions differ from the sums from nothing")
    cold = median_us(lambda: spend_report([HomeSpend.of(shots)], book, UTC, NOW_MS), 3)
    figures = {
        "scratch_us": scratch,
        "update_us": statistics.median(updates) * 1e6,
        "report_us": statistics.median(reports) * 1e6,
        "cold_report_us": cold,
    }
    slots = sum(len(s.cost.requests) for s in shots)
    print(
        f"{size} sessions, {slots} slots over {days} days: "
        + " ".join(f"{k}={v:.0f}" for k, v in figures.items()),
        flush=True,
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--days", type=int, default=60)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    found = {size: measure(size, args.days) for size in sizes}
    small, big = found[min(sizes)], found[max(sizes)]
    print(
        f"update_ratio={big['update_us'] / small['update_us']:.2f} "
        f"update_over_scratch={big['update_us'] / big['scratch_us']:.4f} "
        f"report_over_cold={big['report_us'] / big['cold_report_us']:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
