"""What a ``/metrics`` scrape costs as a home grows: it should follow the change, not the home.

Usage: python bench/metrics_bench.py [--sizes 100,1000,10000] [--live 20] [--rounds 20]

For each size it makes, in this process, a home view of that many sessions (copies of
the repository's real fixture sessions, each its own id; ``--live`` of them live, the rest
ended days ago), then times the scrape's own work — the per-home counters following the
view (:mod:`dshweb.api.tallies`), the families of series, and the text Prometheus reads —
as ``/metrics`` does it, minus the database's count of alerts sent:

- ``cold_ms``: the first scrape (every session counted);
- ``same_ms``: a scrape of the same view (the home did not change);
- ``changed_ms``: a scrape of a view in which one session changed (the median of
  ``--rounds``), which is what a scrape every 15 s of a home at work costs.

The first size (the smallest) is the baseline: ``changed_ratio`` is ``changed_ms`` over
the baseline's, measured in the same run. It checks that each scrape has every live
session's series and the home's session count, and ends each size with ``size=…
series=… cold_ms=… same_ms=… changed_ms=… changed_ratio=…``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from prometheus_client.registry import Collector

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--live", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=20)
    options = parser.parse_args()
    os.environ["DSHWEB_DATA_DIR"] = tempfile.mkdtemp(prefix="metrics-bench-")
    os.environ["DJANGO_SETTINGS_MODULE"] = "dshweb.settings"
    import django

    django.setup()
    from prometheus_client import CollectorRegistry

    import dshweb.api.metrics  # noqa: F401  (imported here, not in the first scrape timed)
    from dshweb.core.fold.gauge import context_gauge
    from dshweb.core.fold.index import HomeIndex
    from dshweb.live.hub import HomeView, SessionView

    sources = []
    for home in sorted((REPO / "tests" / "fixtures" / "homes").iterdir()):
        if (home / "sessions").is_dir():
            index = HomeIndex(home)
            index.refresh()
            sources += [index.snapshot(folder) for folder in index.trackers]
    now = max(s.last_time or 0 for s in sources) + 1_000
    baseline = None
    for size in sorted(int(n) for n in options.sizes.split(",")):
        sessions = {}
        for n in range(size):
            shot = replace(
                sources[n % len(sources)],
                session_id=f"s{n:06d}",
                live=n < options.live,
                last_time=now - (0 if n < options.live else 3 * 86_400_000),
            )
            sessions[shot.session_id] = SessionView(shot, context_gauge(shot), 1)
        bench_home = Home(HomeView(Path("/bench"), sessions, version=1, name="bench"), now)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(bench_home)

        cold, text = scrape(registry)
        _check(text, size, options.live)
        same, _ = scrape(registry)
        changed = []
        for round_ in range(options.rounds):
            touched = f"s{(round_ * 7919) % size:06d}"
            old = sessions[touched]
            sessions = dict(sessions)
            sessions[touched] = SessionView(old.snapshot, old.gauge, old.version + 1)
            view = bench_home.view
            bench_home.view = replace(view, sessions=sessions, version=view.version + 1)
            took, text = scrape(registry)
            changed.append(took)
        _check(text, size, options.live)
        median = statistics.median(changed)
        baseline = baseline or median
        series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
        print(
            f"size={size} series={series} cold_ms={cold:.1f} same_ms={same:.2f} "
            f"changed_ms={median:.2f} changed_ratio={median / baseline:.2f}",
            flush=True,
        )


class Home(Collector):
    """A collector of one home's series, as ``/metrics``' own does it."""

    def __init__(self, view: Any, now: int) -> None:
        from dshweb.api.tallies import Tallies

        self.view = view
        self.now = now
        self.tallies = Tallies()

    def collect(self) -> Iterator[Any]:
        from dshweb.api.metrics import RECENT_MS, _home_families, _session_families
        from dshweb.config import get_config

        since = self.now - RECENT_MS
        followed = self.tallies.follow({"bench": self.view}, get_config().rate_book, since)
        yield from _session_families(followed, self.now, since)
        yield from _home_families(followed)


def scrape(registry: Any) -> tuple[float, str]:
    """The text of one scrape, and the milliseconds it took."""
    from prometheus_client import generate_latest

    started = time.perf_counter()
    text = generate_latest(registry).decode()
    return (time.perf_counter() - started) * 1000, text


def _check(text: str, size: int, live: int) -> None:
    sessions = text.count("dshweb_session_live{")
    if sessions != live or f'dshweb_sessions{{home="bench"}} {float(size)}' not in text:
        raise SystemExit(f"the scrape lacks series: {sessions} live of {live}, home of {size}")


if __name__ == "__main__":
    main()
