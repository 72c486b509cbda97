"""When a rule fires: once per condition, not more often than its cooldown.

Per rule and session the watcher keeps an :class:`Armed`: the key it last fired for (or
holds, for a level) and when it last fired. :func:`decide` takes it and the condition's
new :class:`~dshweb.core.alerts.conditions.Reading`:

- a level fires when it starts to hold, and not again while it goes on holding; once it
  stops, it is armed again. A band that flaps is held by the band's own hysteresis before
  it gets here, so it does not storm;
- an event fires for each new key (a newer fold); a level when it starts to hold. The
  first time a rule looks at a session (a new rule, a restart with no firing of it for
  that session), what happened before ``since_ms`` (when the rule was saved) does not
  fire: not the session's old folds, not a band an ended session was left in (a rule made
  today does not fire for the hundreds of sessions left tight; it does for one that moves
  again). A fold that came while dshweb was stopped, after the rule, still fires;
- nothing fires within ``cooldown`` seconds of the last firing for that session. A level
  that starts to hold within it stays unarmed, so it fires at the first reading after
  the cooldown if it still holds; an event within it is passed over.
"""

from __future__ import annotations

from dataclasses import dataclass

from dshweb.core.alerts.conditions import Reading


@dataclass(frozen=True, slots=True)
class Armed:
    key: str | None = None
    """The key of the last firing (an event), or the level's while it holds."""
    fired_at: float | None = None
    """When it last fired (epoch seconds)."""


@dataclass(frozen=True, slots=True)
class Decision:
    armed: Armed
    fire: bool = False
    cleared: bool = False
    """A level that held stopped holding (its last firing is over)."""


def decide(
    armed: Armed | None,
    reading: Reading,
    *,
    event: bool,
    now: float,
    cooldown: float,
    since_ms: int | None = None,
) -> Decision:
    """The next state after ``reading``, and whether the rule fires now; ``armed`` is
    ``None`` the first time this rule looks at this session."""
    # Only at first sight is the past told apart by its time: after that, whatever comes
    # is new, whenever the log says it happened (a log copied in keeps its old times).
    too_old = (
        armed is None
        and since_ms is not None
        and reading.time is not None
        and reading.time < since_ms
    )
    armed = armed or Armed()
    cooling = armed.fired_at is not None and now - armed.fired_at < cooldown
    if reading.key is None:
        if event or armed.key is None:
            return Decision(armed)
        return Decision(Armed(None, armed.fired_at), cleared=True)
    if reading.key == armed.key:
        return Decision(armed)
    if event:
        if too_old or cooling:
            return Decision(Armed(reading.key, armed.fired_at))
        return Decision(Armed(reading.key, now), fire=True)
    if too_old or cooling:
        return Decision(armed)
    return Decision(Armed(reading.key, now), fire=True)
