"""What the hub costs over a bare fold, and what its checkpoints save on a restart.

Usage: python bench/hub_bench.py [--sizes 1000,5000] [--rounds 3]

For each home (``bench/scale_home.py``: real DSH logs copied into N sessions) it times, in
this process, alternately and ``--rounds`` times each:

- the baseline: every log folded by a bare :class:`SessionTracker` (the fold
  ``bench/fold_bench.py`` measures), nothing else;
- the hub's cold start: the same fold plus what the hub adds (index, snapshots, the ring
  readings, the published view, progress, parking), up to its first complete view (the
  rounds that fold what it read in slices included: a log longer than ``FOLD_SLICE``);
- a restart: a new hub resuming from the checkpoints the first one saved (in a SQLite
  database in a temporary data folder), up to its first complete view.

Each timed part starts from the same heap (the last part's state released and collected,
nothing frozen). It checks that every hub saw every session and that the restarted view
equals the cold one, and ends each size with ``size=… sessions=… cold_ratio=…
best_ratio=… restart_s=… restart_ratio=… checkpoints_mb=…``: ``cold_ratio`` is the median
over the rounds of each round's cold start against the bare fold just before it (a
shared machine's pace drifts by 10–20 % from one round to the next; a pair timed back to
back drifts least), ``best_ratio`` the best cold start against the best bare fold, and
``restart_ratio`` the best restart against the best bare fold.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

if TYPE_CHECKING:  # imported once Django is set up
    from dshweb.live.hub import HomeView, Hub


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000")
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="hub-bench-"))
    os.environ["DSHWEB_DATA_DIR"] = str(data)
    os.environ["DJANGO_SETTINGS_MODULE"] = "dshweb.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from scale_home import big_source, build_home

    from dshweb.collect.checkpoints import DatabaseCheckpoints
    from dshweb.collect.models import FoldCheckpoint
    from dshweb.core.fold.session import SessionTracker
    from dshweb.core.log.home import session_logs
    from dshweb.live.hub import Hub

    big = big_source()
    for size in (int(s) for s in options.sizes.split(",")):
        home = build_home(size, big=big).path
        logs = session_logs(home)
        if len(logs) != size:
            sys.exit(f"FAILED: the home of {size} holds {len(logs)} logs")
        bare: list[float] = []
        cold: list[float] = []
        restart: list[float] = []
        store = DatabaseCheckpoints()
        for _ in range(options.rounds):
            _settle()
            started = time.perf_counter()
            for log in logs:
                SessionTracker(log).refresh()
            bare.append(time.perf_counter() - started)

            FoldCheckpoint.objects.all().delete()
            _settle()
            started = time.perf_counter()
            hub = Hub(home, "sdk", store=store)
            first = _folded_through(hub)
            cold.append(time.perf_counter() - started)
            saved = hub.flush_checkpoints()

            del hub
            _settle()
            started = time.perf_counter()
            again = _folded_through(Hub(home, "sdk", store=store))
            restart.append(time.perf_counter() - started)
            if len(first.sessions) != size or saved != size:
                sys.exit(f"FAILED: {len(first.sessions)} sessions, {saved} checkpoints")
            if (difference := _first_difference(first, again)) is not None:
                sys.exit(f"FAILED: the restarted view differs from the cold one: {difference}")
            del first, again  # the next round starts without this one's state
        blobs = sum(len(b) for b in FoldCheckpoint.objects.values_list("blob", flat=True))
        base = min(bare)
        paired = sorted(c / b for c, b in zip(cold, bare, strict=True))
        print(
            f"size={size}: bare fold {min(bare):.2f}–{max(bare):.2f} s, hub cold start "
            f"{min(cold):.2f}–{max(cold):.2f} s, restart {min(restart):.2f}–{max(restart):.2f} s "
            f"over {options.rounds} rounds; cold / bare of each round "
            + " ".join(f"{r:.3f}" for r in paired)
        )
        print(
            f"size={size} sessions={size} cold_ratio={statistics.median(paired):.3f} "
            f"best_ratio={min(cold) / base:.3f} restart_s={min(restart):.2f} "
            f"restart_ratio={min(restart) / base:.2f} checkpoints_mb={blobs / 1e6:.1f}"
        )


def _first_difference(first: HomeView, again: HomeView) -> str | None:
    """The first session whose snapshot differs between two views, and how (None: none)."""
    for sid in sorted(first.sessions.keys() | again.sessions.keys()):
        a, b = first.sessions.get(sid), again.sessions.get(sid)
        if a is None or b is None:
            return f"{sid}: only in {'the restart' if a is None else 'the cold start'}"
        if a.snapshot != b.snapshot:
            fa, fb = dataclasses.asdict(a.snapshot), dataclasses.asdict(b.snapshot)
            fields = [k for k in fa if fa[k] != fb[k]]
            return f"{sid}: {fields}; " + "; ".join(
                f"{k}: {fa[k]!r:.200} vs {fb[k]!r:.200}" for k in fields[:2]
            )
    return None


def _folded_through(hub: Hub) -> HomeView:
    """The hub's first complete view: its cold start, then the rounds that fold what it
    read in slices (a log longer than :data:`~dshweb.live.timing.FOLD_SLICE`)."""
    view = hub.cold_start()
    while hub.index.unfinished:
        view = hub.sync(())
    return view


def _settle() -> None:
    """Start each timed part from the same heap: nothing frozen (the hub freezes what it
    folded), nothing left for the collector from the part before."""
    gc.unfreeze()
    gc.collect()


if __name__ == "__main__":
    main()
