"""The automatic fold preview, backtested on real logs: did the outcome it gave just
before each pass of the engine's check come?

Usage: python bench/preview_backtest.py [HOME ...]   (default: every fixture home in
``tests/fixtures/homes``, written by the real DSH runtime)

Each session is walked event by event (:mod:`tests.support.previewed`); before every pass of the
engine's check (a pre-step that pruned or compacted) it takes the preview the dashboard
would show then, with only what dshweb can know, and compares it with what the engine
did: the results it cut, whether a summary followed, its range and shadowed tokens. Each
pass is ``exact`` (one outcome, the engine's), ``held`` (the engine's among the outcomes
listed, each with the setting's range that makes it), ``unknown`` (it said which setting
it did not know yet), ``failed`` (the engine's compaction failed and logged no range), or
``wrong``. It prints one line per shape, for the first pass and for the passes after it,
and exits 1 if any pass is ``wrong`` or fewer than :data:`MIN_PASSES` were judged.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.previewed import judge_home  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "homes"
MIN_PASSES = 100
VERDICTS = ("exact", "held", "unknown", "failed", "wrong")


def main() -> int:
    homes = [Path(a) for a in sys.argv[1:]] or sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    table: dict[tuple[str, str], Counter[str]] = {}
    for home in homes:
        for session in judge_home(home):
            for one in session.judged:
                when = "first pass" if one.compaction == 1 else "later passes"
                table.setdefault((session.shape, when), Counter())[one.verdict] += 1
    total: Counter[str] = Counter()
    for (shape, when), counts in sorted(table.items()):
        total += counts
        figures = " ".join(f"{v}={counts[v]}" for v in VERDICTS)
        print(f"shape {shape!r} {when}: {figures}")
    judged = sum(total.values())
    print(" ".join(f"{v}={total[v]}" for v in VERDICTS) + f" passes={judged} homes={len(homes)}")
    if judged < MIN_PASSES:
        print(f"FAILED: judged {judged} passes, fewer than {MIN_PASSES}")
        return 1
    return 1 if total["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
