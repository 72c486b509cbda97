"""The inferred compaction point on real logs: does its range hold the true point, and
how narrow is it once five folds have happened?

Usage: python bench/inferred_point.py [HOMES_DIR]   (default: ``tests/fixtures/homes``)

The ``hidden-*`` fixture sessions ran under points drawn at random when they were made,
given to DSH only as ``--patch`` (the manifest keeps them); the small-window sessions
under 12,000 from their profile, judged here as if it were hidden. Each log is folded
event by event as the dashboard folds it (``tests/support/inferred.py``), checking the range
after every event. It prints one line per session, one per shape, and ends with
``held=`` (sessions whose range held the point after every event), ``narrow=``
(hidden-point sessions within 1% of the point once five folds had happened) and the
counts it ran on. Exit status 1 when a range ever excluded its point, or when it judged
fewer than :data:`MIN_HIDDEN` hidden-point sessions.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.inferred import (  # noqa: E402
    COMPACTIONS_BEFORE_NARROW,
    FIXTURE_HOMES,
    NARROW,
    Judged,
    judged_homes,
)

MIN_HIDDEN = 12


def _share(part: int | None, whole: int) -> str:
    return "—" if part is None else f"{part:,} ({part / whole:.2%})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("homes", nargs="?", type=Path, default=FIXTURE_HOMES)
    args = parser.parse_args()
    judged = judged_homes(args.homes)
    by_shape: dict[str, list[Judged]] = defaultdict(list)
    for j in judged:
        by_shape[j.shape].append(j)
        final = j.final
        print(
            f"{j.session:24} point {j.truth:>7,}  range [{final.low}, {final.high}] "
            f"after {j.decisions} decisions, {j.compactions} folds  "
            f"{'held' if j.held else 'MISSED ' + str(j.misses[:2])}  "
            f"widest after {COMPACTIONS_BEFORE_NARROW} folds {_share(j.widest_after, j.truth)}  "
            f"smallest crossing step {j.crossing}"
        )
    print()
    for shape, group in by_shape.items():
        hidden = [j for j in group if j.session.startswith("hidden-")]
        narrow = sum(1 for j in hidden if j.narrow)
        print(
            f"shape {shape!r}: {len(group)} sessions, held {sum(j.held for j in group)}"
            + (
                f", within {NARROW:.0%} after {COMPACTIONS_BEFORE_NARROW} folds {narrow}"
                if hidden
                else ""
            )
        )
    hidden = [j for j in judged if j.session.startswith("hidden-")]
    held = sum(j.held for j in judged)
    narrow = sum(1 for j in hidden if j.narrow)
    print(
        f"held={held}/{len(judged)} narrow={narrow}/{len(hidden)} "
        f"hidden_sessions={len(hidden)} shapes={len({j.shape for j in hidden})} "
        f"events={sum(j.events for j in judged)} decisions={sum(j.decisions for j in judged)}"
    )
    if held < len(judged):
        print("inferred_point: a range excluded its true point", file=sys.stderr)
        return 1
    if len(hidden) < MIN_HIDDEN:
        print(f"inferred_point: only {len(hidden)} hidden-point sessions", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
