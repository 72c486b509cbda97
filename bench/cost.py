"""What pricing a session costs: per appended event, and per page or list row, on the
fixture session with the most folds.

Usage: python bench/cost.py [HOME]   (default: ``tests/fixtures/homes/prune-heavy``, written
by the real DSH runtime: thousands of events, hundreds of folds; its model,
``deepseek-flash``, is priced as ``deepseek-v4-flash`` here so every fold is priced)

The session's log is folded event by event as the dashboard folds it (a
:class:`SessionTracker`'s steps); per event it times the meter's fold (the baseline,
measured in the same run) and what pricing adds on the fold side: the
:class:`CostCollector` and the ledger's cost bookkeeping (the ledger's observe, timed
whole). It prints the medians, their ratio, and the collector's median over the first
and the last tenth of the events: cost follows the change.

At the end it times a whole snapshot (the baseline), the session page's cost card
(:func:`~dshweb.sessions.display.costs.cost_view`: every kept fold priced) and a list
row's figure (:func:`~dshweb.sessions.display.costs.list_cost`): the card adds up every
fold from running sums the ledger keeps, so it costs the same with 10 folds or 10,000.
Exit status 1 when the session had fewer than :data:`MIN_EVENTS` events or fewer than
:data:`MIN_COMPACTIONS` folds, or they were not priced.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from one_session import largest_session  # noqa: E402
from one_session import median_us as _us  # noqa: E402

from dshweb.core.fold.cost import CostCollector, RateBook, parse_aliases  # noqa: E402
from dshweb.core.fold.index import HomeIndex  # noqa: E402
from dshweb.core.fold.ledger import LedgerCollector  # noqa: E402
from dshweb.core.fold.meter import SessionMeter  # noqa: E402
from dshweb.sessions.display.costs import cost_view, list_cost  # noqa: E402

MIN_EVENTS = 1_000
MIN_COMPACTIONS = 100
BOOK = RateBook(aliases=parse_aliases("deepseek-flash=deepseek-v4-flash"))


def main() -> int:
    found = largest_session(__doc__.splitlines()[0], minimum=MIN_EVENTS)
    if found is None:
        return 1
    home, _, events = found

    meter, ledger, cost = SessionMeter(), LedgerCollector(), CostCollector()
    folds, ledgers, costs = [], [], []
    for event in events:
        began = time.perf_counter()
        meter.fold(event)
        folds.append(time.perf_counter() - began)
        began = time.perf_counter()
        ledger.observe(event, meter)
        ledgers.append(time.perf_counter() - began)
        began = time.perf_counter()
        cost.observe(event, meter)
        costs.append(time.perf_counter() - began)
    tenth = len(events) // 10
    print(
        f"fold side: events={len(events)} requests={sum(n for _, n in cost.counts.items())} "
        f"meter_fold_us_median={_us(folds):.2f} ledger_observe_us_median={_us(ledgers):.2f} "
        f"cost_observe_us_median={_us(costs):.2f} cost_over_fold={_us(costs) / _us(folds):.2f} "
        f"cost_us_first_tenth={_us(costs[:tenth]):.2f} cost_us_last_tenth={_us(costs[-tenth:]):.2f}"
    )

    index = HomeIndex(home)
    index.refresh()
    (folder, *_) = index.trackers
    shots, cards, rows = [], [], []
    for _ in range(30):
        began = time.perf_counter()
        shot = index.snapshot(folder)
        shots.append(time.perf_counter() - began)
        began = time.perf_counter()
        card = cost_view(shot, BOOK)
        cards.append(time.perf_counter() - began)
        began = time.perf_counter()
        list_cost(shot, BOOK)
        rows.append(time.perf_counter() - began)
    if card.compactions < MIN_COMPACTIONS or card.compactions_unrated or not card.compaction_cost:
        print(
            f"cost: only {card.compactions} folds (< {MIN_COMPACTIONS}), or not priced",
            file=sys.stderr,
        )
        return 1
    print(
        f"read side: folds_kept={len(shot.ledger.compactions)} folds={card.compactions} "
        f"fold_cost_usd={card.compaction_cost:.6f} fold_saved_usd={card.compaction_saved:.6f} "
        f"slots={len(shot.cost.requests)} total_usd={card.total:.6f} "
        f"snapshot_us_median={_us(shots):.1f} cost_card_us_median={_us(cards):.1f} "
        f"card_over_snapshot={_us(cards) / _us(shots):.2f} list_row_us_median={_us(rows):.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
