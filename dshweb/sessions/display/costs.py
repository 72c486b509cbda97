"""What a session cost, as the pages show it: by model, its compactions, and the rates used.

Pure: a snapshot's tokens by billing slot (:class:`~dshweb.core.fold.cost.SessionCost`)
and a :class:`~dshweb.core.fold.cost.RateBook` in, plain values out. The session page's
cost card, each ledger row, the list's rows and the API read these, so a figure means the
same wherever it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from dshweb.core.fold.cost import RateBook, RouteCost, window_text
from dshweb.core.fold.session import SessionSnapshot


@dataclass(frozen=True, slots=True)
class CostView:
    """A session's cost card."""

    rows: tuple[RouteCost, ...]
    """By model, the dearest first; a model without rates last."""
    total: float | None
    """Every request and summary with rates (``None``: none had rates)."""
    unrated: bool
    """Some model had no rates: the total leaves it out."""
    compactions: int
    """Compactions of the session (every one, kept or counted)."""
    compaction_cost: float
    """Their summaries and the prefixes sent again, where rated."""
    compaction_saved: float
    """What the requests after them did not send, where rated."""
    compactions_unrated: bool
    """Some compaction was on a model without rates (left out of both)."""
    version: str
    """The ``dsh-llm-cost`` registry's version."""
    dates: tuple[str, ...]
    """The dates the rates used took effect."""
    windows: str
    """The peak windows, as ``01:00–04:00, 06:00–10:00``."""
    off_peak: tuple[tuple[str, float], ...]
    """Each rated model's off-peak factor."""

    @property
    def compaction_net(self) -> float:
        return self.compaction_saved - self.compaction_cost


def cost_view(snapshot: SessionSnapshot, book: RateBook) -> CostView:
    rows = book.by_route(snapshot.cost)
    total, unrated = book.total(snapshot.cost)
    compactions = book.compactions(snapshot.cost, snapshot.ledger.spend)
    entries = [(r.rates.matched or "", r.rates.entry) for r in rows if r.rates.entry is not None]
    return CostView(
        rows=rows,
        total=total,
        unrated=unrated,
        compactions=snapshot.ledger.total,
        compaction_cost=compactions.cost,
        compaction_saved=compactions.saved,
        compactions_unrated=compactions.unrated,
        version=book.version,
        dates=tuple(sorted({e.effective_date for _, e in entries if e.effective_date})),
        windows=", ".join(window_text(w) for w in book.windows),
        off_peak=tuple(
            sorted({(m, e.off_peak_factor) for m, e in entries if e.off_peak_factor is not None})
        ),
    )


@dataclass(frozen=True, slots=True)
class ListCost:
    """A list row's cost: the total, and each model's part (shown when it used several)."""

    total: float | None
    unrated: bool
    parts: tuple[tuple[str, float | None], ...]


def list_cost(snapshot: SessionSnapshot, book: RateBook) -> ListCost:
    total, unrated = book.total(snapshot.cost)
    parts = tuple((row.rates.route[0], row.dollars) for row in book.by_route(snapshot.cost))
    return ListCost(total, unrated, parts)
