"""What an alert rule's condition reads off one session: whether it holds, and in what words.

A rule watches one :class:`Condition` over a :class:`Scope` (every session, the sessions
of one project folder, or one session). Two kinds of condition:

- *levels* hold for as long as the session is in that state: the band at or past
  ``tight`` or ``critical`` (the band the dashboard shows, held with its hysteresis, so a
  measure hovering at an edge does not flap it), a fold expected within ``steps`` steps
  (the forecast's expected steps, rounded up as the page shows them), a cache-hit ratio
  below ``ratio`` over the last ``window`` steps, a reader error, the session's cost at
  ``usd`` dollars or more (what has a price: a partial cost that reaches it has);
- *events* happen at one place in the log: a fold that ended (any kind, a prune pass
  included), a fold or summary that failed (``compaction/end`` with an error), an
  overflow recovery (the provider refused the request as too large and DSH folded to
  retry), each once it has ended. Each such fold is one event, keyed by its ``seq``.

:func:`condition_reading` gives a :class:`Reading`: ``key`` ``None`` when the condition
does not hold, else what holds (``"on"`` for a level, the newest event's seq), and a
one-line summary a person reads in a notification. :func:`event_readings` gives an event
condition's readings one per fold, oldest first, from a seq on: every fold that ended
since the last one told, however many one look finds. :mod:`dshweb.core.alerts.firing`
decides from successive readings when a rule fires.

One condition is a home's, not a session's (:attr:`Condition.is_home`): the home's cost
today, in the server's time zone, at ``usd`` dollars or more (:func:`day_cost_reading`).
It is a level whose key is the day, so it fires once a day at most: when the day's cost
reaches the amount.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import date
from enum import StrEnum

from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.cost import REGISTRY_RATES, RateBook, usd_text
from dshweb.core.fold.gauge import Band, ContextGauge
from dshweb.core.fold.meter import cache_and_prompt
from dshweb.core.fold.session import CACHE_STEPS, SessionSnapshot
from dshweb.core.spans import span_text


class Condition(StrEnum):
    BAND = "band"
    PASS_SOON = "fold-soon"
    COMPACTED = "folded"
    COMPACTION_FAILED = "fold-failed"
    OVERFLOW = "overflow"
    CACHE_LOW = "cache-low"
    READER_ERROR = "reader-error"
    SESSION_COST = "session-cost"
    DAY_COST = "day-cost"

    @property
    def is_event(self) -> bool:
        return self in EVENTS

    @property
    def is_home(self) -> bool:
        """A condition on a home as a whole, not on each session."""
        return self is Condition.DAY_COST

    @property
    def label(self) -> str:
        return LABELS[self]


EVENTS = frozenset({Condition.COMPACTED, Condition.COMPACTION_FAILED, Condition.OVERFLOW})
LABELS = {
    Condition.BAND: "band reaches",
    Condition.PASS_SOON: "fold expected within N steps",
    Condition.COMPACTED: "a fold happened",
    Condition.COMPACTION_FAILED: "a fold or its summary failed",
    Condition.OVERFLOW: "overflow recovery",
    Condition.CACHE_LOW: "cache-hit ratio below X over the last K steps",
    Condition.READER_ERROR: "the log cannot be read",
    Condition.SESSION_COST: "a session's cost reaches $X",
    Condition.DAY_COST: "a home's cost today reaches $X",
}
ALERT_BANDS = (Band.TIGHT, Band.CRITICAL)
"""The bands a rule can watch for (``critical`` only, or ``tight`` and past it)."""
MAX_WINDOW = CACHE_STEPS
"""The most steps a cache-hit rule looks back over (the boundaries a snapshot keeps)."""


class ScopeKind(StrEnum):
    ALL = "all"
    FOLDER = "folder"
    SESSION = "session"


@dataclass(frozen=True, slots=True)
class Scope:
    """Which sessions a rule watches: all, those whose working folder is ``folder`` or
    inside it, or the one session ``session_id`` of home ``home``."""

    kind: ScopeKind = ScopeKind.ALL
    folder: str = ""
    home: str = ""
    session_id: str = ""

    def covers(self, home: str, snapshot: SessionSnapshot) -> bool:
        if self.kind is ScopeKind.ALL:
            return True
        if self.kind is ScopeKind.SESSION:
            return (home, snapshot.session_id) == (self.home, self.session_id)
        return snapshot.works_in(self.folder)


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """A rule's condition and its parameters (only the condition's own are read)."""

    condition: Condition
    band: Band = Band.TIGHT
    steps: int = 3
    ratio: float = 0.5
    window: int = 10
    usd: float = 10.0
    """The dollars a cost condition watches for."""
    scope: Scope = Scope()

    def covers_home(self, home: str) -> bool:
        """Whether a home condition watches ``home`` (its scope names it, or no home)."""
        return self.scope.home in ("", home)


@dataclass(frozen=True, slots=True)
class Reading:
    key: str | None
    """``None``: the condition does not hold; ``"on"`` (a level) or the event's seq."""
    summary: str = ""
    """In English words (the CLI's, a log's)."""
    time: int | None = None
    """When the event happened, or a level's session last changed (epoch ms)."""
    said: str = ""
    """Which sentence ``summary`` is, for a person in another language: a key of
    :data:`dshweb.alerts.words.SUMMARIES`, with ``figures`` to fill it."""
    figures: tuple[tuple[str, object], ...] = ()


NOT_HOLDING = Reading(None)
ON = "on"


def condition_reading(
    spec: RuleSpec,
    snapshot: SessionSnapshot,
    gauge: ContextGauge,
    now_ms: int | None = None,
    book: RateBook = REGISTRY_RATES,
) -> Reading:
    """Whether ``spec``'s condition holds for the session now, and in what words (a cost
    in dollars by ``book``)."""
    condition = spec.condition
    if condition.is_home:  # a home's: read by day_cost_reading
        return NOT_HOLDING
    if condition is Condition.SESSION_COST:
        level = _session_cost(spec, snapshot, book)
        return level if level.key is None else replace(level, time=snapshot.last_time)
    if not condition.is_event:
        level = _level(spec, snapshot, gauge, now_ms)
        return level if level.key is None else replace(level, time=snapshot.last_time)
    compactions = reversed(snapshot.ledger.compactions)
    newest = next(
        (compaction for compaction in compactions if _matches(compaction, condition)), None
    )
    return NOT_HOLDING if newest is None else _compaction_reading(newest)


def event_readings(
    spec: RuleSpec, snapshot: SessionSnapshot, *, after: int | None = None
) -> tuple[Reading, ...]:
    """A reading per fold that ``spec``'s event condition matches, oldest first: every one
    whose seq is past ``after`` (all of them when ``None``)."""
    readings: list[Reading] = []
    for compaction in reversed(snapshot.ledger.compactions):
        if after is not None and compaction.seq <= after:
            break
        if _matches(compaction, spec.condition):
            readings.append(_compaction_reading(compaction))
    return tuple(reversed(readings))


def _level(
    spec: RuleSpec, snapshot: SessionSnapshot, gauge: ContextGauge, now_ms: int | None
) -> Reading:
    condition = spec.condition
    if condition is Condition.BAND:
        return _band(spec.band, gauge)
    if condition is Condition.PASS_SOON:
        forecast = snapshot.forecast(now_ms)
        if forecast.steps is None or math.ceil(forecast.steps) > spec.steps:
            return NOT_HOLDING
        steps = math.ceil(forecast.steps)
        within = span_text(str(forecast.steps_low), str(forecast.steps_high))
        return Reading(
            ON,
            f"fold expected in ~{steps} step{'s' * (steps != 1)} ({within})",
            said="fold-soon",
            figures=(("steps", steps), ("within", within)),
        )
    if condition is Condition.CACHE_LOW:
        ratio = cache_hit_ratio(snapshot, spec.window)
        if ratio is None or ratio >= spec.ratio:
            return NOT_HOLDING
        return Reading(
            ON,
            f"cache hits {ratio:.0%} of prompt tokens over the last {spec.window} steps",
            said="cache-low",
            figures=(("percent", f"{ratio:.0%}"), ("window", spec.window)),
        )
    if not snapshot.errors:
        return NOT_HOLDING
    error = snapshot.errors[0]
    return Reading(
        ON, f"the log cannot be read: {error}", said="reader-error", figures=(("error", error),)
    )


def _session_cost(spec: RuleSpec, snapshot: SessionSnapshot, book: RateBook) -> Reading:
    total, unrated = book.total(snapshot.cost)
    if total is None or total < spec.usd:
        return NOT_HOLDING
    cost, amount = usd_text(total), usd_text(spec.usd)
    partial = " (partial: a model without a price is not counted)" if unrated else ""
    return Reading(
        ON,
        f"session cost {cost}, past {amount}{partial}",
        said="session-cost-partial" if unrated else "session-cost",
        figures=(("cost", cost), ("amount", amount)),
    )


def day_cost_reading(
    spec: RuleSpec,
    home: str,
    day: date,
    dollars: float | None,
    unrated: bool,
    time_ms: int | None = None,
) -> Reading:
    """Whether home ``home``'s cost on ``day`` (today: ``dollars`` of what has a price,
    ``unrated`` when some request had none) reaches ``spec.usd``; its key is the day.
    ``time_ms``: when the home last changed (what happened before the rule was saved
    does not fire at first sight)."""
    if dollars is None or dollars < spec.usd:
        return NOT_HOLDING
    cost, amount = usd_text(dollars), usd_text(spec.usd)
    partial = " (partial: a model without a price is not counted)" if unrated else ""
    return Reading(
        day.isoformat(),
        f"cost on {day.isoformat()} in home {home}: {cost}, past {amount}{partial}",
        time=time_ms,
        said="day-cost-partial" if unrated else "day-cost",
        figures=(("day", day.isoformat()), ("home", home), ("cost", cost), ("amount", amount)),
    )


def _band(band: Band, gauge: ContextGauge) -> Reading:
    reached = gauge.band is Band.CRITICAL or (gauge.band is Band.TIGHT and band is Band.TIGHT)
    if not reached:
        return NOT_HOLDING
    figures = f"{gauge.used:,} of {gauge.window:,} tokens" if gauge.window else ""
    if gauge.headroom is not None:
        place = "below" if gauge.headroom > 0 else "past"
        figures += f", {abs(gauge.headroom):,} {place} the compaction point"
    said = "band" if gauge.headroom is None else f"band-{place}"
    return Reading(
        ON,
        f"context {gauge.band.value}: {gauge.percent}% ({figures})",
        said=said,
        figures=(
            ("band", gauge.band.value),
            ("percent", gauge.percent),
            ("used", f"{gauge.used or 0:,}"),
            ("window", f"{gauge.window or 0:,}"),
            ("headroom", f"{abs(gauge.headroom or 0):,}"),
        ),
    )


def _matches(compaction: Compaction, condition: Condition) -> bool:
    if condition is Condition.COMPACTED:
        return compaction.status == "done"
    if condition is Condition.COMPACTION_FAILED:
        return compaction.status == "failed"
    return (
        condition is Condition.OVERFLOW
        and compaction.kind == "overflow"
        and compaction.status != "open"
    )


def _compaction_reading(compaction: Compaction) -> Reading:
    said, figures = _compaction_words(compaction)
    return Reading(
        str(compaction.seq), _compaction_summary(compaction), compaction.time, said, figures
    )


def _compaction_summary(compaction: Compaction) -> str:
    kind = "prune pass" if compaction.kind == "prune" else f"{compaction.kind} compaction"
    if compaction.status == "failed":
        return f"{kind} failed: {compaction.error}"
    if compaction.before is not None and compaction.after is not None:
        return f"{kind}: {compaction.before:,} → {compaction.after:,} tokens"
    return kind


def _compaction_words(compaction: Compaction) -> tuple[str, tuple[tuple[str, object], ...]]:
    kind = ("kind", compaction.kind)
    if compaction.status == "failed":
        return "fold-failed", (kind, ("error", compaction.error))
    if compaction.before is not None and compaction.after is not None:
        return "fold", (
            kind,
            ("before", f"{compaction.before:,}"),
            ("after", f"{compaction.after:,}"),
        )
    return "fold-kind", (kind,)


def cache_hit_ratio(snapshot: SessionSnapshot, steps: int) -> float | None:
    """Cache-read tokens over prompt tokens of the requests of the last ``steps`` steps
    (``None`` before the session has that many, or when they sent no prompt tokens)."""
    readings = snapshot.step_cache
    if steps < 1 or len(readings) < steps:
        return None
    cached_now, prompt_now = cache_and_prompt(snapshot.token_usage)
    # From the boundary `steps` back: those steps' requests, the newest one included once
    # its usage is in the log.
    cached_then, prompt_then = readings[-steps]
    prompt = prompt_now - prompt_then
    if prompt <= 0:
        return None
    return (cached_now - cached_then) / prompt
