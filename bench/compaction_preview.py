"""What the fold preview and the settings replay cost, on the largest fixture session.

Usage: python bench/compaction_preview.py [HOME]   (default: ``tests/fixtures/homes/prune-heavy``,
the fixture session with the most events, written by the real DSH runtime)

The preview: the session's log is folded event by event (a :class:`SessionMeter`, as the
dashboard folds); after each event it times the fold of that event (the baseline, measured
in the same run) and the two previews of the surface then
(:func:`~dshweb.core.fold.preview.automatic_preview` and
:func:`~dshweb.core.fold.preview.manual_preview`). It prints the median of each in
microseconds, their ratio, and the preview's median over the first and the last tenth of
the events: cost follows the change, so the two should be about the same however long
the session has run.

It also times a whole snapshot of the session at its end (what a socket message
builds, the previews included) and prints the previews' share of it.

The replay: :func:`~dshweb.core.fold.replay.record_log` of the session (once per state
of its log; the baseline is a whole fold of the same log by a :class:`HomeIndex`), and
:func:`~dshweb.core.fold.replay.replay` of it under a lower point (what a keystroke on
the settings form costs), also of the recording repeated to at least :data:`STEPS` steps.
Exit status 1 when the session had fewer than :data:`MIN_EVENTS` events or no fold.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from one_session import largest_session  # noqa: E402
from one_session import median_us as _us  # noqa: E402

from dshweb.core.fold.compaction import measured_tokens  # noqa: E402
from dshweb.core.fold.index import HomeIndex  # noqa: E402
from dshweb.core.fold.meter import SessionMeter  # noqa: E402
from dshweb.core.fold.preview import automatic_preview, manual_preview  # noqa: E402
from dshweb.core.fold.replay import record_log, replay  # noqa: E402
from dshweb.core.profile.effective import EngineConfig  # noqa: E402

MIN_EVENTS = 1_000
STEPS = 1_000
RETAIN = 2_400


def main() -> int:
    found = largest_session(__doc__.splitlines()[0], minimum=MIN_EVENTS)
    if found is None:
        return 1
    home, log, events = found

    meter = SessionMeter()
    folds, previews = [], []
    for event in events:
        began = time.perf_counter()
        meter.fold(event)
        folds.append(time.perf_counter() - began)
        began = time.perf_counter()
        measured = measured_tokens(meter)
        automatic_preview(meter, measured, 19_200, RETAIN)
        manual_preview(meter, measured)
        previews.append(time.perf_counter() - began)
    tenth = len(events) // 10
    print(
        f"preview: events={len(events)} surface_nodes_at_end={len(meter.nodes)} "
        f"fold_us_median={_us(folds):.1f} preview_us_median={_us(previews):.1f} "
        f"preview_over_fold={_us(previews) / _us(folds):.2f} "
        f"preview_us_first_tenth={_us(previews[:tenth]):.1f} "
        f"preview_us_last_tenth={_us(previews[-tenth:]):.1f}"
    )

    began = time.perf_counter()
    index = HomeIndex(home)
    index.refresh()
    fold_ms = (time.perf_counter() - began) * 1000
    shots = []
    for folder in list(index.trackers)[:1] * 50:
        began = time.perf_counter()
        index.snapshot(folder)
        shots.append(time.perf_counter() - began)
    print(
        f"snapshot (its previews included): snapshot_us_median={_us(shots):.1f} "
        f"preview_share_of_snapshot={_us(previews) / _us(shots):.2f}"
    )
    began = time.perf_counter()
    recording = record_log(log)
    record_ms = (time.perf_counter() - began) * 1000
    engine = EngineConfig(threshold_ratio=0.35, headroom_tokens=1000, retain_ratio=0.1)
    runs = []
    for _ in range(20):
        began = time.perf_counter()
        said = replay(recording, engine)
        runs.append(time.perf_counter() - began)
    if not recording.acted or not said.passes:
        print("compaction_preview: the session has no fold to replay", file=sys.stderr)
        return 1
    times = -(-STEPS // len(recording.checks))
    longer = replace(recording, checks=recording.checks * times, acted=())
    long_runs = []
    for _ in range(5):
        began = time.perf_counter()
        replay(longer, engine)
        long_runs.append(time.perf_counter() - began)
    print(
        f"replay: steps={len(recording.checks)} real_folds={len(recording.acted)} "
        f"replayed_folds={len(said.automatic)} home_fold_ms={fold_ms:.1f} "
        f"record_ms={record_ms:.1f} record_over_fold={record_ms / fold_ms:.2f} "
        f"replay_ms_median={statistics.median(runs) * 1000:.2f} "
        f"replay_ms_median_{len(longer.checks)}_steps={statistics.median(long_runs) * 1000:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
