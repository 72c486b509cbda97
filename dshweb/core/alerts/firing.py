"""When a rule fires: once per condition, not more often than its cooldown.

Per rule and session the watcher keeps an :class:`Armed`: the key it last fired for (or
holds, for a level; for an event, the seq of the last fold told or passed over) and when
it last fired. :func:`decide` takes it and a level's new
:class:`~dshweb.core.alerts.conditions.Reading`; :func:`decide_events` takes it and an
event condition's readings of the folds past it, oldest first
(:func:`~dshweb.core.alerts.conditions.event_readings` from :func:`told_through`):

- a level fires when it starts to hold, and not again while it goes on holding; once it
  stops, it is armed again. A band that flaps is held by the band's own hysteresis before
  it gets here, so it does not storm;
- an event fires once per fold: every fold past the last one told, in seq order, each
  with its own figures, however many one look finds (a batch appended at once, the folds
  of a session while dshweb was stopped), the newest :data:`EVENTS_PER_LOOK` of them at
  most (the older are passed over). The first time a rule looks at a session (a new rule,
  a restart with no firing of it for that session), what happened before ``since_ms``
  (when the rule was saved) does not fire: not the session's old folds, however many,
  not a band an ended session was left in (a rule made today does not fire for the
  hundreds of sessions left tight; it does for one that moves again). A fold that came
  while dshweb was stopped, after the rule, still fires;
- nothing fires within ``cooldown`` seconds of the last firing for that session. A level
  that starts to hold within it stays unarmed, so it fires at the first reading after
  the cooldown if it still holds; an event within it is passed over, and so are the
  folds of one look after the first that fires (all at the same moment), unless the
  cooldown is 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dshweb.core.alerts.conditions import Reading


@dataclass(frozen=True, slots=True)
class Armed:
    key: str | None = None
    """The level's key while it holds; an event's: the last fold told or passed over."""
    fired_at: float | None = None
    """When it last fired (epoch seconds)."""


@dataclass(frozen=True, slots=True)
class Decision:
    armed: Armed
    fire: bool = False
    cleared: bool = False
    """A level that held stopped holding (its last firing is over)."""


EVENTS_PER_LOOK = 10
"""The most folds one look at a session tells under one rule: the newest, when more have
ended since the last one told (a log appended while dshweb was stopped for days)."""


def decide(
    armed: Armed | None,
    reading: Reading,
    *,
    now: float,
    cooldown: float,
    since_ms: int | None = None,
) -> Decision:
    """A level's next state after ``reading``, and whether the rule fires now; ``armed``
    is ``None`` the first time this rule looks at this session."""
    too_old = armed is None and _before(reading, since_ms)
    armed = armed or Armed()
    if reading.key is None:
        if armed.key is None:
            return Decision(armed)
        return Decision(Armed(None, armed.fired_at), cleared=True)
    if reading.key == armed.key or too_old or _cooling(armed, now, cooldown):
        return Decision(armed)
    return Decision(Armed(reading.key, now), fire=True)


def compaction_seq(key: str | None) -> int | None:
    """The seq of the fold an event's key names (``None``: it names none, a level's)."""
    return int(key) if key is not None and key.isascii() and key.isdigit() else None


def told_through(armed: Armed | None) -> int | None:
    """The seq of the last fold an event rule told or passed over in this session; the
    folds past it are new (``None``: every fold the session has is)."""
    return None if armed is None else compaction_seq(armed.key)


def decide_events(
    armed: Armed | None,
    readings: Sequence[Reading],
    *,
    now: float,
    cooldown: float,
    since_ms: int | None = None,
) -> list[Decision]:
    """One decision per reading of ``readings`` (the folds past :func:`told_through`,
    oldest first), each the state after it and whether it fires now; ``armed`` is ``None``
    the first time this rule looks at this session."""
    # A key that names no fold (the rule watched a level before it was edited) is as good
    # as none: its session is seen afresh, its past by its time.
    first_sight = armed is None or (armed.key is not None and compaction_seq(armed.key) is None)
    state = armed or Armed()
    passed_over = len(readings) - EVENTS_PER_LOOK
    decisions: list[Decision] = []
    for index, reading in enumerate(readings):
        old = first_sight and _before(reading, since_ms)
        if old or index < passed_over or _cooling(state, now, cooldown):
            state = Armed(reading.key, state.fired_at)
            decisions.append(Decision(state))
        else:
            state = Armed(reading.key, now)
            decisions.append(Decision(state, fire=True))
    return decisions


def _before(reading: Reading, since_ms: int | None) -> bool:
    """Whether ``reading`` tells of what happened before the rule was saved. Only at first
    sight is the past told apart by its time: after that, whatever comes is new, whenever
    the log says it happened (a log copied in keeps its old times)."""
    return since_ms is not None and reading.time is not None and reading.time < since_ms


def _cooling(armed: Armed, now: float, cooldown: float) -> bool:
    return armed.fired_at is not None and now - armed.fired_at < cooldown
