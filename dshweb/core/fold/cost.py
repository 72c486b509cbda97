"""What a session's requests and compactions cost, in dollars, by the ``dsh-llm-cost``
registry.

Rates are never typed here: the registry (the PyPI package ``dsh-llm-cost``, shared with
DSH's own cost plugin) resolves a model to its dollars per million tokens (its *rates*,
as the house calls them: a *price* is in tokens, :mod:`dshweb.core.fold.pricing`), its
off-peak factor
and the date they took effect, with the plugin's matching ladder (exact id, then the
longest registry key inside the id, else *unknown*: shown as unknown, never as $0).

**Fold side** (:class:`CostCollector`, fed each event after the meter): tokens, not
dollars, kept by billing slot (:mod:`dshweb.core.fold.billing`: who answered and *when*
on the registry's clock, to the quarter hour of its UTC day). So the peak windows can
change without folding again, and a slot's tokens cost what each request of it would
have cost on its own: the cost is linear in tokens and one factor holds a whole quarter
hour (peak windows start and end on quarter hours, :func:`parse_windows`).

**Read side** (:class:`RateBook`): the registry, the peak windows and any models rated
as another (``deepseek-flash`` as ``deepseek-v4-flash``: a choice the person running
dshweb makes and the page names). :meth:`RateBook.money` turns a slot's tokens into dollars.

What a compaction cost and what it saved (:class:`CompactionCost`, kept on each
:class:`~dshweb.core.fold.compactions.Compaction` by the ledger):

- *summary*: the summariser's own request (``compaction/summary.usage``), as billed;
- *rewrite*: the next request sends the changed part of its prefix uncached — the
  checkpoint and everything after it (DSH's count of those nodes right after the
  compaction), billed as a cache write where the model has a cache-write rate, else as
  input (a miss);
- *not resent*: every request after the compaction, until the next one, did not send what it
  freed (shadowed − what replaced it, DSH's count); those tokens would have been read
  from the cache, so they are costed at the cache-read rate of the request that skipped
  them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsh_llm_cost import pricing as registry

from dshweb.core.fold.billing import NO_TIME, Route, Slot, slot_of
from dshweb.core.fold.cost_settings import Window as Window
from dshweb.core.fold.cost_settings import parse_aliases as parse_aliases
from dshweb.core.fold.cost_settings import parse_windows as parse_windows

if TYPE_CHECKING:  # the read side (a rate book, a total) is used without the fold
    from dshweb.core.fold.meter import Sample, SessionMeter, Usage
    from dshweb.core.log.wire import AnyEvent, CompactionSummary, ShadowData

Buckets = tuple[int, int, int, int]
"""Uncached input, output, cache-read and cache-write tokens."""


def _add(tally: dict[Slot, list[int]], slot: Slot, usage: Usage, sign: int = 1) -> None:
    found = tally.get(slot)
    if found is None:
        found = tally[slot] = [0, 0, 0, 0]
    for bucket, count in enumerate(usage.counts):
        found[bucket] += sign * count


def frozen(tally: Mapping[Slot, list[int]]) -> tuple[tuple[Slot, Buckets], ...]:
    return tuple((slot, (b[0], b[1], b[2], b[3])) for slot, b in tally.items())


# -- fold side -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionCost:
    """The tokens one compaction cost and saved, by slot (in dollars by
    :meth:`RateBook.compaction`)."""

    summary: Slot | None = None
    """The summariser's request (its tokens are the compaction's ``summary_usage``)."""
    rewritten: int = 0
    """DSH's count of the checkpoint and everything after it, right after the compaction."""
    rewrite: Slot | None = None
    """The next request, which sent them uncached (``None`` until it comes)."""
    not_resent: tuple[tuple[Slot, int], ...] = ()
    """Requests after the compaction, until the next one, by slot."""

    @property
    def requests_after(self) -> int:
        return sum(count for _, count in self.not_resent)


@dataclass(frozen=True, slots=True)
class CompactionSpend:
    """Every compaction's rewrite and saving added up, by the slot of the request concerned
    (kept as the ledger goes, so costing all of a session's compactions costs what costing
    one does, and compactions past those the ledger keeps one by one still count)."""

    resent: tuple[tuple[Slot, int], ...] = ()
    """DSH's count of the prefix the first request after each compaction sent again."""
    unsent: tuple[tuple[Slot, int], ...] = ()
    """What the requests after each compaction, until the next, did not send."""


@dataclass(frozen=True, slots=True)
class CostedCompactions:
    """All of a session's compactions in dollars: their part with rates, and whether one on
    a model without rates was left out."""

    cost: float
    """The summaries and the prefixes sent again."""
    saved: float
    """What the requests after them did not send."""
    unrated: bool

    @property
    def net(self) -> float:
        return self.saved - self.cost


@dataclass(frozen=True, slots=True)
class SessionCost:
    """A session's tokens by slot: its requests (exactly ``tokenUsage``, split) and its
    summariser's (not part of ``tokenUsage``), and how many requests of each route."""

    requests: tuple[tuple[Slot, Buckets], ...] = ()
    summaries: tuple[tuple[Slot, Buckets], ...] = ()
    counts: tuple[tuple[Route, int], ...] = ()


@dataclass(slots=True)
class CostCollector:
    """Fold-side state of :class:`SessionCost`; see the module docstring."""

    requests: dict[Slot, list[int]] = field(default_factory=dict)
    summaries: dict[Slot, list[int]] = field(default_factory=dict)
    counts: dict[Route, int] = field(default_factory=dict)
    last_slot: Slot | None = None
    """Where the last sample was counted (a sample that replaces it is taken off there)."""

    def observe(self, event: AnyEvent, meter: SessionMeter) -> None:
        """Look at ``event`` after ``meter`` has folded it (the tracker calls
        :meth:`sampled` or :meth:`summarised` itself, by the event's type)."""
        from dshweb.core.log.wire import CompactionSummary

        if meter.sample is not None:
            self.sampled(meter.sample)
        elif type(event) is CompactionSummary:
            self.summarised(event)

    def sampled(self, sample: Sample) -> None:
        """The usage sample the meter just counted (:attr:`SessionMeter.sample`)."""
        last = self.last_slot
        if sample.replaced is not None and last is not None:
            _add(self.requests, last, sample.replaced, -1)
            self.counts[(last[0], last[1])] -= 1
        route = (sample.slot[0], sample.slot[1])
        self.counts[route] = self.counts.get(route, 0) + 1
        self.last_slot = sample.slot
        _add(self.requests, sample.slot, sample.usage)

    def summarised(self, event: CompactionSummary) -> None:
        """A ``compaction/summary``: the summariser's own request."""
        from dshweb.core.fold.meter import to_usage

        data = event.data
        found = summary_route(data)
        usage = to_usage(data.usage) if data is not None else None
        if found is not None and usage is not None:
            _add(self.summaries, slot_of(found, event.time), usage)

    def result(self) -> SessionCost:
        return SessionCost(
            requests=frozen(self.requests),
            summaries=frozen(self.summaries),
            counts=tuple((route, n) for route, n in self.counts.items() if n),
        )


def summary_route(data: ShadowData | None) -> Route | None:
    """Who wrote a summary (``model``, ``provider`` of ``compaction/summary``)."""
    model = data.model if data is not None else None
    provider = data.provider if data is not None else None
    if not isinstance(model, str) or not model:
        return None
    return (model, provider if isinstance(provider, str) else "")


# -- read side -------------------------------------------------------------------------------

DEFAULT_WINDOWS: tuple[Window, ...] = tuple(
    (round(start * 4), round(end * 4)) for start, end in registry.PEAK_WINDOWS
)
"""The registry's own peak windows (01:00–04:00 and 06:00–10:00 UTC)."""


def window_text(window: Window) -> str:
    (h1, q1), (h2, q2) = divmod(window[0], 4), divmod(window[1], 4)
    return f"{h1:02d}:{q1 * 15:02d}–{h2:02d}:{q2 * 15:02d}"


@functools.cache
def registry_version() -> str:
    import importlib.metadata  # here: it takes a while to import

    try:
        return importlib.metadata.version("dsh-llm-cost")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a broken install
        return "?"


@dataclass(frozen=True, slots=True)
class Rates:
    """How one route is rated: the registry's entry, or why there is none."""

    route: Route
    entry: registry.PricingEntry | None
    matched: str | None
    """The registry key that rated it."""
    match: str
    """``exact``, ``substring``, ``ollama`` (free) or ``none`` (unknown)."""
    alias: str | None = None
    """The model this server rates it as (:attr:`RateBook.aliases`)."""

    @property
    def known(self) -> bool:
        return self.match != "none"

    @property
    def effective_date(self) -> str | None:
        return self.entry.effective_date if self.entry is not None else None


@dataclass(frozen=True, slots=True)
class RouteCost:
    """One model's requests and summaries: tokens, and dollars when it has rates."""

    rates: Rates
    requests: int
    tokens: Buckets
    """The requests' tokens (``tokenUsage``'s buckets, this route's part)."""
    summary_tokens: Buckets
    cost: float | None
    """The requests' dollars (``None``: no rates)."""
    summary_cost: float | None

    @property
    def dollars(self) -> float | None:
        """Its requests and summaries together (``None``: no rates)."""
        return None if self.cost is None else self.cost + (self.summary_cost or 0.0)


@dataclass(frozen=True, slots=True)
class CostedCompaction:
    """A compaction's cost and savings in dollars; ``None`` where there is nothing to cost (a
    prune pass has no summariser; the next request has not come yet) or, with
    ``unrated``, a model without rates."""

    summary: float | None
    rewrite: float | None
    not_resent: float | None
    requests_after: int
    unrated: bool = False
    """A model it involved has no rates: its cost and savings are not known."""

    @property
    def cost(self) -> float | None:
        if self.unrated:
            return None
        return (self.summary or 0.0) + (self.rewrite or 0.0)

    @property
    def net(self) -> float | None:
        """Saved − cost (positive: the compaction paid for itself so far)."""
        cost = self.cost
        if cost is None or self.not_resent is None:
            return None
        return self.not_resent - cost


@dataclass(frozen=True)
class RateBook:
    """The registry, read with this server's peak windows and model aliases."""

    windows: tuple[Window, ...] = DEFAULT_WINDOWS
    aliases: tuple[tuple[str, str], ...] = ()
    """(model as logged, registry model it is rated as)."""

    @property
    def version(self) -> str:
        return registry_version()

    @functools.cached_property
    def _alias(self) -> dict[str, str]:
        return dict(self.aliases)

    def resolve(self, route: Route) -> Rates:
        return _resolve(route, self._alias.get(route[0]))

    def factor(self, entry: registry.PricingEntry, weekend: bool, quarter: int) -> float:
        """1 at peak, the entry's off-peak factor otherwise (the registry's rule, with
        these windows)."""
        off: float | None = entry.off_peak_factor
        if off is None or quarter == NO_TIME:
            return 1.0
        if weekend:
            return off
        return 1.0 if any(start <= quarter < end for start, end in self.windows) else off

    def money(self, slot: Slot, tokens: Buckets) -> float | None:
        """``tokens`` of one slot in dollars, by the registry's own formula
        (``None``: the route has no rates)."""
        rates = self.resolve((slot[0], slot[1]))
        if not rates.known:
            return None
        entry = rates.entry
        if entry is None:  # free
            return 0.0
        base: float = registry.compute_cost_usd(
            entry,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cache_read_tokens=tokens[2],
            cache_write_tokens=tokens[3],
        )
        return base * self.factor(entry, slot[2], slot[3])

    def by_route(self, cost: SessionCost) -> tuple[RouteCost, ...]:
        """The session's requests and summaries by model, the dearest first."""
        counts = dict(cost.counts)
        routes = set(counts) | {(s[0], s[1]) for s, _ in cost.summaries}
        rows = []
        for route in routes:
            tokens, money = self._sum(s for s in cost.requests if (s[0][0], s[0][1]) == route)
            summary, summary_money = self._sum(
                s for s in cost.summaries if (s[0][0], s[0][1]) == route
            )
            rows.append(
                RouteCost(
                    self.resolve(route), counts.get(route, 0), tokens, summary, money, summary_money
                )
            )
        rows.sort(key=lambda r: (r.cost is None, -(r.dollars or 0.0), r.rates.route))
        return tuple(rows)

    def _sum(self, items: Iterable[tuple[Slot, Buckets]]) -> tuple[Buckets, float | None]:
        tokens = [0, 0, 0, 0]
        money: float | None = 0.0
        for slot, buckets in items:
            for i in range(4):
                tokens[i] += buckets[i]
            costed = self.money(slot, buckets)
            money = None if costed is None or money is None else money + costed
        return (tokens[0], tokens[1], tokens[2], tokens[3]), money

    def total(self, cost: SessionCost) -> tuple[float | None, bool]:
        """Every request and summary with rates in dollars (``None``: none had rates), and
        whether some had none."""
        dollars: float | None = None
        unknown = False
        for slot, buckets in (*cost.requests, *cost.summaries):
            if not any(buckets):
                continue
            money = self.money(slot, buckets)
            if money is None:
                unknown = True
            else:
                dollars = (dollars or 0.0) + money
        return dollars, unknown

    def compaction(
        self, cost: CompactionCost, summary_usage: Usage | None, freed: int | None
    ) -> CostedCompaction:
        """One compaction in dollars (``freed``: shadowed − what replaced it, what each later
        request did not send)."""
        summary = None
        if cost.summary is not None and summary_usage is not None:
            summary = self.money(cost.summary, summary_usage.counts)
        rewrite = None
        if cost.rewrite is not None:
            rewrite = self._rewrite(cost.rewrite, cost.rewritten)
        saved: float | None = 0.0
        for slot, count in cost.not_resent:
            money = self.money(slot, (0, 0, max(0, freed or 0) * count, 0))
            saved = None if money is None or saved is None else saved + money
        unrated = (
            (cost.summary is not None and summary_usage is not None and summary is None)
            or (cost.rewrite is not None and rewrite is None)
            or saved is None
        )
        return CostedCompaction(
            None if unrated else summary,
            None if unrated else rewrite,
            None if unrated else saved,
            cost.requests_after,
            unrated,
        )

    def compactions(self, cost: SessionCost, spend: CompactionSpend) -> CostedCompactions:
        """Every compaction: the summariser's requests (``cost.summaries``), the prefixes sent
        again and what was not sent (``spend``)."""
        parts = [self.money(slot, tokens) for slot, tokens in cost.summaries if any(tokens)]
        parts += [self._rewrite(slot, tokens) for slot, tokens in spend.resent if tokens]
        saved = [self.money(slot, (0, 0, tokens, 0)) for slot, tokens in spend.unsent if tokens]
        return CostedCompactions(
            cost=sum(p for p in parts if p is not None),
            saved=sum(p for p in saved if p is not None),
            unrated=None in parts or None in saved,
        )

    def _rewrite(self, slot: Slot, tokens: int) -> float | None:
        rates = self.resolve((slot[0], slot[1]))
        entry = rates.entry
        writes = entry is not None and entry.cache_write_per_m is not None
        return self.money(slot, (0, 0, 0, tokens) if writes else (tokens, 0, 0, 0))


SMALLEST_USD = 0.000001
"""Below this a cost is shown as "less than" (it would read as zero)."""


def usd_text(value: float) -> str:
    """Dollars as a person reads a bill: ``$12.35``, ``$0.0634``, ``$0.000857`` (three
    significant digits below a dollar; a cent is a lot here, a request costs fractions of
    one). Every page, the API's texts and ``dshweb snapshot`` write costs so."""
    if value < 0:
        return "−" + usd_text(-value)
    if value == 0:
        return "$0"
    if value < SMALLEST_USD:
        return f"<${SMALLEST_USD:.6f}"
    decimals = 2 - math.floor(math.log10(value))
    if value >= 1 or round(value, decimals) >= 1:
        return f"${value:,.2f}"
    return f"${value:.{decimals}f}"


REGISTRY_RATES = RateBook()
"""The registry's own peak windows and no aliases (a server passes its own)."""


@functools.lru_cache(maxsize=256)
def _resolve(route: Route, alias: str | None) -> Rates:
    model, provider = route
    found = registry.resolve_pricing(alias or model, provider)
    return Rates(route, found.entry, found.matched_model, found.match, alias)


def rate_book(peak_windows: str, rate_as: str, names: tuple[str, str]) -> RateBook:
    """The rates a person set: ``peak_windows`` (:func:`parse_windows`; empty: the
    registry's) and ``rate_as`` (:func:`parse_aliases`). ``ValueError`` saying what is
    wrong, under the setting's name as the person typed it (``names``: those of the two)."""
    try:
        windows = parse_windows(peak_windows) if peak_windows.strip() else DEFAULT_WINDOWS
    except ValueError as exc:
        raise ValueError(f"{names[0]}: {exc}") from None
    try:
        return RateBook(windows=windows, aliases=parse_aliases(rate_as))
    except ValueError as exc:
        raise ValueError(f"{names[1]}: {exc}") from None


def _buckets_json(tokens: Buckets) -> dict[str, int]:
    from dshweb.core.fold.meter import BUCKET_NAMES

    return dict(zip(BUCKET_NAMES, tokens, strict=True))


def cost_json(cost: SessionCost, spend: CompactionSpend, book: RateBook) -> dict[str, Any]:
    """A session's cost in the CLI's and the API's JSON shape (dollars as floats; ``None``
    where a model has no rates)."""
    total, unrated = book.total(cost)
    compactions = book.compactions(cost, spend)
    return {
        "registry": {"package": "dsh-llm-cost", "version": book.version},
        "peakWindowsUtc": [window_text(w).replace("–", "-") for w in book.windows],
        "totalUsd": total,
        "unpriced": unrated,
        "byModel": [
            {
                "model": row.rates.route[0],
                "provider": row.rates.route[1],
                "pricedAs": row.rates.matched,
                "match": row.rates.match,
                "alias": row.rates.alias,
                "effectiveDate": row.rates.effective_date,
                "requests": row.requests,
                "tokens": _buckets_json(row.tokens),
                "usd": row.cost,
                "summaryTokens": _buckets_json(row.summary_tokens),
                "summaryUsd": row.summary_cost,
            }
            for row in book.by_route(cost)
        ],
        "folds": {
            "costUsd": compactions.cost,
            "notResentUsd": compactions.saved,
            "unpriced": compactions.unrated,
        },
    }
