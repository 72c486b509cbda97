"""Alert rules in the core (dshweb.core.alerts): what each condition reads off real
snapshots, and when a rule fires (once per condition or fold, cooldown, not for the
past)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from dshweb.core.alerts.conditions import (
    ON,
    Condition,
    Reading,
    RuleSpec,
    Scope,
    ScopeKind,
    cache_hit_ratio,
    condition_reading,
    day_cost_reading,
    event_readings,
)
from dshweb.core.alerts.firing import (
    EVENTS_PER_LOOK,
    Armed,
    Decision,
    decide,
    decide_events,
    told_through,
)
from dshweb.core.fold.billing import slot_of
from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.cost import RateBook, SessionCost, usd_text
from dshweb.core.fold.gauge import Band, ContextGauge, context_gauge
from dshweb.core.fold.ledger import Ledger
from dshweb.core.fold.session import SessionSnapshot
from tests.support.snapshots import fixture_snapshot, session_snapshot


def gauge(band: Band, used: int = 20_000, threshold: int | None = 21_000) -> ContextGauge:
    headroom = threshold - used if threshold is not None else None
    return ContextGauge(used, 24_000, round(used / 240), threshold, headroom, band)


@pytest.mark.parametrize(
    ("watched", "band", "holds"),
    [
        (Band.TIGHT, Band.MODERATE, False),
        (Band.TIGHT, Band.TIGHT, True),
        (Band.TIGHT, Band.CRITICAL, True),
        (Band.CRITICAL, Band.TIGHT, False),
        (Band.CRITICAL, Band.CRITICAL, True),
        (Band.TIGHT, Band.UNKNOWN, False),
    ],
)
def test_a_band_rule_holds_at_its_band_and_past_it(watched: Band, band: Band, holds: bool) -> None:
    snapshot = session_snapshot("s", last_time=5)
    reading = condition_reading(RuleSpec(Condition.BAND, band=watched), snapshot, gauge(band))
    assert (reading.key == ON) is holds
    if holds:
        assert reading.time == 5  # a level carries when its session last changed
        assert reading.summary == (
            f"context {band.value}: 83% (20,000 of 24,000 tokens, 1,000 below the compaction point)"
        )


def test_a_compaction_rule_keys_on_the_newest_compaction_of_a_real_log() -> None:
    snapshot = fixture_snapshot("pace-steady")
    compactions = snapshot.ledger.compactions
    reading = condition_reading(RuleSpec(Condition.COMPACTED), snapshot, context_gauge(snapshot))
    newest = compactions[-1]
    assert reading.key == str(newest.seq) and reading.time == newest.time
    assert newest.before is not None and newest.after is not None
    assert reading.summary == f"automatic compaction: {newest.before:,} → {newest.after:,} tokens"
    # Earlier in the same log, the newest fold is an earlier one: a new key per fold.
    earlier = fixture_snapshot("pace-steady", at_seq=compactions[2].end_seq)
    before = condition_reading(RuleSpec(Condition.COMPACTED), earlier, context_gauge(earlier))
    assert before.key == str(compactions[2].seq)


def test_event_readings_are_every_compaction_past_a_seq_oldest_first_with_its_figures() -> None:
    snapshot = fixture_snapshot("pace-steady")
    compactions = snapshot.ledger.compactions
    spec = RuleSpec(Condition.COMPACTED)
    readings = event_readings(spec, snapshot, after=compactions[6].seq)
    assert [r.key for r in readings] == [str(f.seq) for f in compactions[7:]]
    assert [r.summary for r in readings] == [
        f"automatic compaction: {f.before:,} → {f.after:,} tokens" for f in compactions[7:]
    ]
    assert [r.time for r in readings] == [f.time for f in compactions[7:]]
    assert len(event_readings(spec, snapshot)) == len(compactions)
    assert event_readings(spec, snapshot, after=compactions[-1].seq) == ()
    # The newest of them is what the condition reads.
    assert condition_reading(spec, snapshot, context_gauge(snapshot)) == readings[-1]


def test_failed_compactions_and_overflow_recoveries_are_their_own_conditions() -> None:
    failed = Compaction("manual", 40, 1_000, end_seq=44, error="summary is not smaller (…)")
    overflow = Compaction("overflow", 60, 2_000, end_seq=66, before=30_000, after=9_000)
    snapshot = session_snapshot("s", ledger=Ledger(compactions=(failed, overflow)))
    read = {c: condition_reading(RuleSpec(c), snapshot, gauge(Band.AMPLE)) for c in Condition}
    assert read[Condition.COMPACTION_FAILED] == Reading(
        "40",
        "manual compaction failed: summary is not smaller (…)",
        1_000,
        "fold-failed",
        (("kind", "manual"), ("error", "summary is not smaller (…)")),
    )
    assert read[Condition.OVERFLOW] == Reading(
        "60",
        "overflow compaction: 30,000 → 9,000 tokens",
        2_000,
        "fold",
        (("kind", "overflow"), ("before", "30,000"), ("after", "9,000")),
    )
    assert read[Condition.COMPACTED].key == "60"  # the newest that ended well
    events = {c: event_readings(RuleSpec(c), snapshot) for c in Condition if c.is_event}
    assert {c: [r.key for r in rs] for c, rs in events.items()} == {
        Condition.COMPACTED: ["60"],
        Condition.COMPACTION_FAILED: ["40"],
        Condition.OVERFLOW: ["60"],
    }
    assert read[Condition.READER_ERROR].key is None


def test_a_compaction_expected_soon_follows_the_forecast_rounded_up() -> None:
    snapshot = fixture_snapshot("pace-steady")
    forecast = snapshot.forecast()
    assert forecast.steps is not None
    due = math.ceil(forecast.steps)
    spec = RuleSpec(Condition.PASS_SOON, steps=due)
    assert condition_reading(spec, snapshot, context_gauge(snapshot)).summary.startswith(
        f"fold expected in ~{due} step"
    )
    later = replace(spec, steps=due - 1)
    assert condition_reading(later, snapshot, context_gauge(snapshot)).key is None


def test_the_cache_hit_ratio_over_the_last_steps_is_worked_from_the_running_sums() -> None:
    snapshot = fixture_snapshot("plain-turns")
    usage = snapshot.token_usage
    read_now = usage["cacheReadTokens"]
    prompt_now = read_now + usage["uncachedInputTokens"] + usage["cacheWriteTokens"]
    read_then, prompt_then = snapshot.step_cache[-3]
    ratio = cache_hit_ratio(snapshot, 3)
    assert ratio == (read_now - read_then) / (prompt_now - prompt_then)
    assert 0 < ratio < 1
    # The whole session's ratio is the same sums from the start (no reading before it).
    assert cache_hit_ratio(snapshot, len(snapshot.step_cache) + 1) is None
    spec = RuleSpec(Condition.CACHE_LOW, ratio=ratio + 0.01, window=3)
    assert condition_reading(spec, snapshot, context_gauge(snapshot)).summary == (
        f"cache hits {ratio:.0%} of prompt tokens over the last 3 steps"
    )
    assert (
        condition_reading(replace(spec, ratio=ratio), snapshot, context_gauge(snapshot)).key is None
    )


def test_a_reader_error_holds_while_the_log_has_one() -> None:
    broken = session_snapshot("s", errors=("torn frame at byte 812: 3 bytes of 40",))
    reading = condition_reading(RuleSpec(Condition.READER_ERROR), broken, gauge(Band.AMPLE))
    assert reading.summary == "the log cannot be read: torn frame at byte 812: 3 bytes of 40"


@pytest.mark.parametrize(
    ("scope", "home", "cwd", "session_id", "covered"),
    [
        (Scope(), "local", "/w", "s", True),
        (Scope(ScopeKind.FOLDER, "/home/me/app"), "local", "/home/me/app", "s", True),
        (Scope(ScopeKind.FOLDER, "/home/me/app/"), "local", "/home/me/app/src", "s", True),
        (Scope(ScopeKind.FOLDER, "/home/me/app"), "local", "/home/me/apple", "s", False),
        (Scope(ScopeKind.FOLDER, "/home/me/app"), "local", None, "s", False),
        (Scope(ScopeKind.SESSION, home="local", session_id="s"), "local", "/w", "s", True),
        (Scope(ScopeKind.SESSION, home="laptop", session_id="s"), "local", "/w", "s", False),
        (Scope(ScopeKind.SESSION, home="local", session_id="t"), "local", "/w", "s", False),
    ],
)
def test_scopes(scope: Scope, home: str, cwd: str | None, session_id: str, covered: bool) -> None:
    assert scope.covers(home, session_snapshot(session_id, cwd=cwd)) is covered


HOLDS = Reading(ON, "tight", time=2_000_000)
CLEAR = Reading(None)
SINCE = 1_000_000
"""When the rules of these tests were saved (epoch ms)."""


def run(readings: Sequence[tuple[float, Reading]], *, cooldown: float = 0) -> list[str]:
    """What each reading of a level in turn did: "fire", "clear" or "-"."""
    armed: Armed | None = None
    done = []
    for now, reading in readings:
        decision = decide(armed, reading, now=now, cooldown=cooldown, since_ms=SINCE)
        armed = decision.armed
        done.append("fire" if decision.fire else "clear" if decision.cleared else "-")
    return done


def compaction(seq: int, time: int | None = None) -> Reading:
    return Reading(str(seq), f"fold {seq}", time=SINCE + seq if time is None else time)


def run_events(
    looks: Sequence[tuple[float, Sequence[int]]], *, cooldown: float = 0
) -> list[list[int]]:
    """The folds each look fires, given the seqs of the folds the session has by then (the
    readings past the last fold told, as the watcher takes them)."""
    armed: Armed | None = None
    fired = []
    for now, seqs in looks:
        after = told_through(armed)
        readings = [compaction(seq) for seq in seqs if after is None or seq > after]
        decisions = decide_events(armed, readings, now=now, cooldown=cooldown, since_ms=SINCE)
        assert len(decisions) == len(readings)
        fired.append([int(str(r.key)) for r, d in zip(readings, decisions, strict=True) if d.fire])
        armed = decisions[-1].armed if decisions else armed or Armed()
    return fired


def test_a_level_fires_once_while_it_holds_and_again_after_it_cleared() -> None:
    readings = [(10, HOLDS), (11, HOLDS), (12, HOLDS), (13, CLEAR), (14, CLEAR), (15, HOLDS)]
    assert run(readings) == ["fire", "-", "-", "clear", "-", "fire"]


def test_within_the_cooldown_a_level_waits_and_fires_once_it_is_over() -> None:
    readings = [(10, HOLDS), (11, CLEAR), (12, HOLDS), (30, HOLDS), (40, HOLDS)]
    assert run(readings, cooldown=15) == ["fire", "clear", "-", "fire", "-"]


def test_an_event_fires_once_per_compaction_and_passes_over_those_in_the_cooldown() -> None:
    looks = [(10, []), (11, [5]), (12, [5]), (13, [5, 9]), (40, [5, 9]), (41, [5, 9, 12])]
    assert run_events(looks, cooldown=10) == [[], [5], [], [], [], [12]]


def test_every_compaction_one_look_finds_fires_in_seq_order() -> None:
    looks = [(10, []), (11, [5, 9, 12]), (12, [5, 9, 12]), (13, [5, 9, 12, 20, 31])]
    assert run_events(looks) == [[], [5, 9, 12], [], [20, 31]]
    # Each decision keeps the fold it told: a write that fails after the first is taken
    # up from there.
    decisions = decide_events(Armed("4", 1), [compaction(5), compaction(9)], now=11, cooldown=0)
    assert decisions == [Decision(Armed("5", 11), fire=True), Decision(Armed("9", 11), fire=True)]


def test_a_cooldown_lets_the_first_compaction_of_a_look_fire_and_passes_over_the_rest() -> None:
    decisions = decide_events(
        Armed("4", 1),
        [compaction(5), compaction(9), compaction(12)],
        now=100,
        cooldown=60,
        since_ms=SINCE,
    )
    assert decisions == [
        Decision(Armed("5", 100), fire=True),
        Decision(Armed("9", 100)),
        Decision(Armed("12", 100)),
    ]
    # Still within it from an earlier firing: all passed over, and told through the newest.
    cooling = decide_events(Armed("4", 90), [compaction(5), compaction(9)], now=100, cooldown=60)
    assert [d.fire for d in cooling] == [False, False] and cooling[-1].armed == Armed("9", 90)


def test_one_look_tells_the_newest_few_of_a_long_absence() -> None:
    readings = [compaction(seq) for seq in range(10, 10 + 3 * EVENTS_PER_LOOK)]
    decisions = decide_events(Armed("4", 1), readings, now=50, cooldown=0, since_ms=SINCE)
    fired = [r.key for r, d in zip(readings, decisions, strict=True) if d.fire]
    assert fired == [r.key for r in readings[-EVENTS_PER_LOOK:]]
    assert decisions[-1].armed == Armed(readings[-1].key, 50)
    assert decisions[0] == Decision(Armed("10", 1))  # passed over, no firing


def test_nothing_fires_for_what_happened_before_the_rule() -> None:
    old_compaction = compaction(5, time=999_999)
    first = decide_events(None, [old_compaction], now=1, cooldown=0, since_ms=SINCE)
    assert first == [Decision(Armed("5", None))]
    # After first sight a new fold fires whatever time the log gives it.
    older_still = compaction(9, time=999_000)
    again = decide_events(first[-1].armed, [older_still], now=2, cooldown=0, since_ms=SINCE)
    assert again == [Decision(Armed("9", 2), fire=True)]
    # A level of a session idle since before the rule: nothing, and armed for its next change.
    old_level = Reading(ON, "tight", time=999_999)
    idle = decide(None, old_level, now=1, cooldown=0, since_ms=SINCE)
    assert idle == Decision(Armed())
    moved = decide(idle.armed, old_level, now=3, cooldown=0, since_ms=SINCE)
    assert moved == Decision(Armed(ON, 3), fire=True)


def test_first_sight_of_a_real_session_with_many_compactions_fires_none_of_them() -> None:
    snapshot = fixture_snapshot("prune-heavy")
    readings = event_readings(RuleSpec(Condition.COMPACTED), snapshot)
    assert len(readings) > 10 * EVENTS_PER_LOOK
    newest = max(r.time or 0 for r in readings)
    decisions = decide_events(None, readings, now=5, cooldown=0, since_ms=newest + 1)
    assert not any(d.fire for d in decisions)
    assert told_through(decisions[-1].armed) == snapshot.ledger.compactions[-1].seq
    # Folds after the rule, in the same first look, do fire: those after it only.
    since = readings[-3].time
    assert since is not None and readings[-4].time is not None and readings[-4].time < since
    later = decide_events(None, readings, now=5, cooldown=0, since_ms=since)
    assert [r.key for r, d in zip(readings, later, strict=True) if d.fire] == [
        r.key for r in readings[-3:]
    ]


def test_a_key_that_names_no_compaction_is_a_first_sight() -> None:
    """A rule edited from a level to an event: its session's past does not fire."""
    readings = [compaction(5, time=999), compaction(9)]
    decisions = decide_events(Armed(ON, 1), readings, now=9, cooldown=0, since_ms=SINCE)
    assert decisions == [Decision(Armed("5", 1)), Decision(Armed("9", 9), fire=True)]


# -- budgets -----------------------------------------------------------------------------------


def _costing(*requests: tuple[str, int]) -> SessionSnapshot:
    """A session of ``(model, output tokens)`` requests at 2026-09-02 10:00 UTC."""
    at_ms = int(datetime(2026, 9, 2, 10, tzinfo=UTC).timestamp() * 1000)
    slots = tuple((slot_of((m, "deepseek-official"), at_ms), (0, n, 0, 0)) for m, n in requests)
    return session_snapshot("s", last_time=7, cost=SessionCost(requests=slots))


def test_a_session_cost_rule_holds_from_its_amount_on_and_never_on_an_unknown_cost() -> None:
    shot = _costing(("deepseek-v4-pro", 100_000))
    total, _ = RateBook().total(shot.cost)
    assert total is not None and total > 0
    band = gauge(Band.AMPLE)
    below = condition_reading(RuleSpec(Condition.SESSION_COST, usd=total * 1.01), shot, band)
    assert below.key is None
    at = condition_reading(RuleSpec(Condition.SESSION_COST, usd=total), shot, band)
    assert (at.key, at.time, at.said) == (ON, 7, "session-cost")
    assert at.summary == f"session cost {usd_text(total)}, past {usd_text(total)}"
    unknown = _costing(("mystery-model-9", 100_000))
    assert condition_reading(RuleSpec(Condition.SESSION_COST, usd=1e-9), unknown, band).key is None
    # Partial: what has a price reaches the amount; the rest would only add to it.
    mixed = _costing(("deepseek-v4-pro", 100_000), ("mystery-model-9", 100_000))
    partial = condition_reading(RuleSpec(Condition.SESSION_COST, usd=total), mixed, band)
    assert partial.key == ON and partial.said == "session-cost-partial"
    # A home's condition is never read off one session.
    assert condition_reading(RuleSpec(Condition.DAY_COST, usd=1e-9), shot, band).key is None


def test_a_day_cost_rule_fires_once_a_day_when_the_day_crosses_its_amount() -> None:
    spec = RuleSpec(Condition.DAY_COST, usd=5.0)
    monday, tuesday = date(2026, 9, 7), date(2026, 9, 8)
    armed: Armed | None = None
    fires = []
    for day, dollars in [
        (monday, 4.99),  # below
        (monday, 5.0),  # crosses: fires
        (monday, 9.0),  # still past: nothing
        (tuesday, 0.5),  # a new day, below: over
        (tuesday, 6.0),  # crosses again: fires
        (tuesday, 7.0),
    ]:
        reading = day_cost_reading(spec, "local", day, dollars, False, 1)
        decision = decide(armed, reading, now=0.0, cooldown=0)
        armed = decision.armed
        fires.append((reading.key, decision.fire, decision.cleared))
    assert fires == [
        (None, False, False),
        ("2026-09-07", True, False),
        ("2026-09-07", False, False),
        (None, False, True),
        ("2026-09-08", True, False),
        ("2026-09-08", False, False),
    ]
    assert day_cost_reading(spec, "local", monday, None, True).key is None  # unknown: no
    assert RuleSpec(Condition.DAY_COST).covers_home("any")
    assert not replace(spec, scope=Scope(ScopeKind.ALL, home="a")).covers_home("b")
