"""The fold forecasts, backtested on real logs: does each range hold the step the fold came?

Usage: python bench/forecast_backtest.py [HOME ...]   (default: every fixture home in
``tests/fixtures/homes``, written by the real DSH runtime: steady paces, mixed tool and
answer steps, slow then fast, a pace that changes inside a fold cycle (``pace-cycle-*``),
a prune-heavy session with hundreds of folds (``prune-heavy``), a sub-agent that folds in
its one long turn (``subagent-loop``), and the ``hidden-*`` sessions, whose point only
their folds tell)

Each session is replayed frame by frame into a copy of its home, through the same
:class:`~dshweb.core.fold.index.HomeIndex` the dashboard folds with. At every step
boundary (a step's request going out, as :mod:`dshweb.core.fold.pace` sees it) it takes
the two forecasts the dashboard would show then and, once the replay is done, compares
each with the boundary at which its fold actually came, ``actual`` steps later: the next
*pass* (``SessionSnapshot.forecast``) with the next fold the compaction point started (an
automatic compaction or a prune pass), the next *summary*
(``SessionSnapshot.summary_forecast``) with the next automatic compaction. A forecast
counts when the fold came at least :data:`AHEAD` steps later (a forecast for the very
next step is no forecast).

A step is sampled when the fold came at least :data:`AHEAD` steps later; it is a hit when
the range ``[stepsLow, stepsHigh]`` holds the real number of steps (±1: where a fold is
counted) and is no wider than max(4, that number); a step with no forecast is a miss.
It prints each session's samples of the next pass (``MISS``: the range missed, ``WIDE``:
too wide) and its summary's rate, one line per shape for each forecast (the hidden-point
homes name theirs in the manifest, the others in :data:`SHAPES`): the hit rate over all
its samples, where the point was known (the profile's, or a range a fold of the session
has bounded from above) and where it was not (before the first fold of a session whose
point only its folds tell: the forecast goes by the range the engine's own rule allows),
and how many samples had no forecast (after the session's first step; those at it, when
nothing of its own is measured yet, apart). It ends with ``hit_rate=``,
``hit_rate_point_known=``, ``hit_rate_point_unknown=``, ``held=``, ``informative=``,
``mae_steps=``, ``median_width_steps=`` and the counts (``no_forecast=`` after the first
step, ``first_step=``, and by reason) for
the next pass, the same line prefixed ``summary_`` for the next summary; last, what a
forecast costs (the median time, reading the session's pace afresh as the first forecast
after a step does, and with it kept), beside what the snapshot it is part of costs. Exit
status 1 when it sampled fewer than :data:`MIN_FORECASTS` steps.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from growth import read_frames  # noqa: E402

from dshweb.core.fold import forecast as forecast_module  # noqa: E402
from dshweb.core.fold.forecast import Forecast, pass_forecast  # noqa: E402
from dshweb.core.fold.index import HomeIndex  # noqa: E402
from dshweb.core.fold.session import SessionSnapshot  # noqa: E402
from dshweb.core.log.home import session_logs  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "homes"
AHEAD = 3
MIN_FORECASTS = 30
THRESHOLD_KINDS = ("automatic", "prune")
"""The folds that end a pass forecast; a summary forecast's, the automatic ones alone."""
SUMMARY_KINDS = ("automatic",)
Kind = Literal["pass", "summary"]


@dataclass(frozen=True, slots=True)
class Scored:
    session: str
    step: int
    actual: int
    forecast: Forecast

    shape: str = ""
    kind: Kind = "pass"
    known: bool = True
    """The point was known then: the profile's, or bounded from above by a fold."""
    first: bool = False
    """At the session's first step: nothing of its own measured yet."""

    @property
    def held(self) -> bool:
        """The range holds the real number of steps (±1: where a fold is counted)."""
        low, high = self.forecast.steps_low, self.forecast.steps_high
        if low is None:
            return False
        return low - 1 <= self.actual <= (high + 1 if high is not None else math.inf)

    @property
    def informative(self) -> bool:
        """The range is no wider than max(4, the real number of steps)."""
        low, high = self.forecast.steps_low, self.forecast.steps_high
        return low is not None and high is not None and high - low <= max(4, self.actual)

    @property
    def hit(self) -> bool:
        return self.held and self.informative


def replay(
    home: Path, relative: Path, scratch: Path, costs: list[tuple[float, float, float]]
) -> list[Scored]:
    """Forecasts at every step boundary of one session (its log at ``relative`` in
    ``home``), scored against its real folds; each forecast's time (reading the pace
    afresh, and again with the pace kept), and its snapshot's, go to ``costs``."""
    copy = scratch / f"{home.name}-{len(list(scratch.iterdir()))}"
    shutil.copytree(home, copy)
    path = copy / relative
    frames = read_frames(path)
    path.write_bytes(frames[0].data)
    session_id = path.parent.name
    index = HomeIndex(copy)
    index.refresh()
    folder = path.parent
    said: list[tuple[int, dict[Kind, Forecast], bool, bool]] = []  # (seq, …then)
    last = None
    for frame in frames[1:]:
        with path.open("ab") as out:
            out.write(frame.data)
        index.refresh()
        tracker = index.trackers[folder]
        boundary = tracker.pace.last
        if boundary is None or boundary[:2] == last:
            continue
        last = boundary[:2]
        began = time.perf_counter()
        shot = index.snapshot(folder)
        took = time.perf_counter() - began
        forecast_module._pace.cache_clear()  # a step's first forecast reads the pace
        cold = _timed_forecast(tracker.pace.checks.base(shot.measured_tokens), shot)
        warm = _timed_forecast(tracker.pace.checks.base(shot.measured_tokens), shot)
        costs.append((cold, warm, took))
        forecasts: dict[Kind, Forecast] = {
            "pass": shot.forecast(),
            "summary": shot.summary_forecast(),
        }
        point = shot.pace_forecast.point
        known = point.exact is not None or (
            point.source == "inferred" and shot.inferred.high is not None
        )
        first = tracker.pace.checks.steps <= 1
        said.append((tracker.meter.last_seq, forecasts, known, first))
    shot = index.snapshot(folder)
    seqs = [seq for seq, *_ in said]
    scored: list[Scored] = []
    which: tuple[tuple[Literal["pass", "summary"], tuple[str, ...]], ...] = (
        ("pass", THRESHOLD_KINDS),
        ("summary", SUMMARY_KINDS),
    )
    for kind, kinds in which:
        compaction_seqs = sorted(f.seq for f in shot.ledger.compactions if f.kind in kinds)
        # The boundary each fold came at: the first one after it (DSH folds before a step).
        fold_steps = sorted(
            {next((i for i, s in enumerate(seqs) if s > f), len(seqs)) for f in compaction_seqs}
        )
        for step, (_, forecasts, known, first) in enumerate(said):
            upcoming = next((j for j in fold_steps if j > step), None)
            if upcoming is not None and upcoming - step >= AHEAD:
                scored.append(
                    Scored(
                        session_id,
                        step,
                        upcoming - step,
                        forecasts[kind],
                        kind=kind,
                        known=known,
                        first=first,
                    )
                )
    return scored


def _timed_forecast(base: int, shot: SessionSnapshot) -> float:
    """Seconds one forecast of ``shot`` from ``base`` takes."""
    began = time.perf_counter()
    pass_forecast(
        measured=base,
        point=shot.pace_forecast.point,
        growth=shot.pace_growth,
        times=shot.step_times,
    )
    return time.perf_counter() - began


SHAPES = {
    "pace-steady": "steady",
    "patched-point": "steady",
    "told-truth": "steady",
    "told-unmirrored": "steady",
    "pace-mixed": "mixed tool/answer steps",
    "auto-compact": "mixed tool/answer steps",
    "fold-failures": "mixed tool/answer steps",
    "pace-slow-fast": "slow then fast",
    "demo-live": "slow then fast",
    "subagent-parent": "sub-agents",
    "subagent-loop": "sub-agents",
    "pace-steady-b": "steady",
    "pace-slow-fast-b": "slow then fast",
    "pace-cycle-a": "pace changes inside a fold cycle",
    "pace-cycle-b": "pace changes inside a fold cycle",
    "prune-heavy": "prune-heavy, hundreds of folds",
    "big-tools": "mixed tool/answer steps",
    "cjk-emoji": "mixed tool/answer steps",
    "web-presets": "steady small steps",
    "replay-steady-low": "steady",
    "replay-steady-b-retain": "steady",
    "replay-mixed-nopruner": "mixed tool/answer steps",
    "replay-slow-fast-b-high": "slow then fast",
    "replay-cycle-a-headroom": "pace changes inside a fold cycle",
    "replay-slow-fast-low": "slow then fast",
    "replay-cycle-b-retain": "pace changes inside a fold cycle",
    "cost-pro": "a big result every fifth step, pruned",
    "cost-switch": "a big result every fifth step, pruned",
}
"""Each fixture home's shape; the ``hidden-*`` homes name theirs in the manifest."""


def shape_of(home: Path) -> str:
    manifest = home.parent / "MANIFEST.json"
    if manifest.exists():
        hidden = json.loads(manifest.read_text("utf-8")).get(home.name, {}).get("hidden")
        if hidden:
            return str(hidden["shape"])
    return SHAPES.get(home.name, home.name)


def _rate(scored: list[Scored]) -> str:
    hits = sum(s.hit for s in scored)
    return f"{hits / len(scored):.3f} ({hits}/{len(scored)})" if scored else "—"


def _none(scored: list[Scored]) -> str:
    """How many had no forecast: after the session's first step (the goal is 0), and at
    it (nothing of its own measured yet; none where the home has no other session on the
    model)."""
    none = [s for s in scored if s.forecast.steps is None]
    return f"{sum(not s.first for s in none)} first_step={sum(s.first for s in none)}"


def _totals(scored: list[Scored], prefix: str) -> str:
    """The whole's line for one forecast, its keys prefixed with ``prefix``."""
    made = [s for s in scored if s.forecast.steps is not None]
    none = Counter(str(s.forecast.reason) for s in scored if s.forecast.steps is None)
    widths = [
        s.forecast.steps_high - s.forecast.steps_low
        for s in made
        if s.forecast.steps_high is not None and s.forecast.steps_low is not None
    ]
    mae = statistics.mean(abs((s.forecast.steps or 0) - s.actual) for s in made) if made else 0
    return (
        f"{prefix}hit_rate={_rate(scored)} "
        f"{prefix}hit_rate_point_known={_rate([s for s in scored if s.known])} "
        f"{prefix}hit_rate_point_unknown={_rate([s for s in scored if not s.known])} "
        f"{prefix}held={sum(s.held for s in scored)} "
        f"{prefix}informative={sum(s.informative for s in scored)} {prefix}mae_steps={mae:.2f} "
        f"{prefix}median_width_steps="
        f"{statistics.median(widths) if widths else float('nan'):.1f} "
        f"{prefix}samples={len(scored)} {prefix}forecasts={len(made)} "
        f"{prefix}sessions={len({s.session for s in scored})} "
        f"{prefix}no_forecast={_none(scored)}"
        + "".join(f" {prefix}{reason.replace(' ', '_')}={n}" for reason, n in sorted(none.items()))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("homes", nargs="*", type=Path)
    args = parser.parse_args()
    homes = args.homes or sorted(p for p in FIXTURES.iterdir() if (p / "sessions").is_dir())
    everything: list[Scored] = []
    costs: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="forecast-backtest-") as tmp:
        for home in homes:
            shape = shape_of(home)
            for log in sorted(session_logs(home), key=lambda log: log.path):
                session_id = log.path.parent.name
                scored = [
                    replace(s, shape=shape)
                    for s in replay(home, log.path.relative_to(home), Path(tmp), costs)
                ]
                everything.extend(scored)
                passes = [s for s in scored if s.kind == "pass"]
                summaries = [s for s in scored if s.kind == "summary"]
                if passes:
                    print(
                        f"{home.name}/{session_id} ({shape}): {len(passes)} steps ≥ {AHEAD} "
                        f"before a fold, hit rate {_rate(passes)}"
                    )
                for s in passes:
                    f = s.forecast
                    verdict = "" if s.hit else "  MISS" if not s.held else "  WIDE"
                    high = f.steps_high if f.steps_high is not None else "…"
                    print(
                        f"   step {s.step:3}: fold in {s.actual:2}, said "
                        + (
                            f"{f.steps} [{f.steps_low}–{high}]{verdict}"
                            if f.steps is not None
                            else f"nothing ({f.reason})"
                        )
                    )
                if summaries:
                    print(
                        f"   summary: {len(summaries)} steps ≥ {AHEAD} before a summary, "
                        f"hit rate {_rate(summaries)}"
                    )
    passes = [s for s in everything if s.kind == "pass"]
    summaries = [s for s in everything if s.kind == "summary"]
    if len(passes) < MIN_FORECASTS:
        print(
            f"forecast_backtest: only {len(passes)} samples (< {MIN_FORECASTS})",
            file=sys.stderr,
        )
        return 1
    print()
    shapes = sorted({s.shape for s in everything})
    for shape in shapes:
        for kind, scored in (("", passes), (" summary", summaries)):
            group = [s for s in scored if s.shape == shape]
            if not group:
                continue
            print(
                f"shape {shape!r}{kind}: hit_rate={_rate(group)} "
                f"point_known={_rate([s for s in group if s.known])} "
                f"point_unknown={_rate([s for s in group if not s.known])} "
                f"no_forecast={_none(group)} sessions={len({s.session for s in group})}"
            )
    print(_totals(passes, "") + f" shapes={len(shapes)}")
    print(_totals(summaries, "summary_"))
    cold, warm, snapshot = (statistics.median(c[i] for c in costs) * 1000 for i in range(3))
    print(
        f"forecast_ms_median cold={cold:.3f} warm={warm:.3f} snapshot_ms_median={snapshot:.3f} "
        f"cold_share_of_snapshot={cold / snapshot:.2f} timed={len(costs)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
