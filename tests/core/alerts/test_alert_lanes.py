"""Fair turns in a delivery lane (dshweb/core/alerts/lanes.py): no owner and no target
ever holds every slot, another owner's or target's waiting attempt goes first, nothing
waiting is dropped, and the lane keeps nothing but what runs and whose turn it is."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from dshweb.core.alerts.lanes import Attempt, Lane, LaneLimits

WEBHOOKS = LaneLimits(slots=8, per_owner=4, per_target=3)
ANN, BEA, CY = 1, 2, 3
SLOW, FAST = "slow.example:443", "fast.example:443"


def attempts(owner: int, target: str, count: int, first_id: int) -> list[Attempt]:
    return [Attempt(first_id + n, owner, target) for n in range(count)]


def test_one_owners_twenty_slow_receivers_leave_slots_to_another_owner() -> None:
    lane = Lane(WEBHOOKS)
    # ann's 20 are the older ones: given first, as the database orders them.
    due = [*attempts(ANN, SLOW, 20, 100), Attempt(200, BEA, FAST)]
    started = lane.take(due)
    assert Counter(a.owner for a in started) == {ANN: 3, BEA: 1}  # ann's target is full
    assert [a.delivery_id for a in started if a.owner == BEA] == [200]
    # ann's other receivers still get the rest of her own slots, no more.
    more = lane.take(due + [Attempt(300 + n, ANN, f"r{n}.example:443") for n in range(5)])
    assert Counter(a.target for a in more) == {"r0.example:443": 1}
    assert Counter(a.owner for a in lane.running.values()) == {ANN: 4, BEA: 1}


def test_one_owner_never_holds_every_slot_however_many_receivers() -> None:
    lane = Lane(WEBHOOKS)
    ann = [Attempt(n, ANN, f"r{n}.example:443") for n in range(20)]
    assert len(lane.take(ann)) == WEBHOOKS.per_owner
    # bea's attempt, newer than all of ann's, starts at once beside them.
    assert lane.take([*ann, Attempt(99, BEA, "r0.example:443")]) == [
        Attempt(99, BEA, "r0.example:443")
    ]


def test_one_target_never_holds_every_slot_whoever_aims_at_it() -> None:
    lane = Lane(WEBHOOKS)
    due = [Attempt(n, n % 5 + 1, SLOW) for n in range(30)]  # five owners, one receiver
    started = lane.take(due)
    assert len(started) == WEBHOOKS.per_target and len({a.owner for a in started}) == 3
    assert lane.take([*due, Attempt(99, BEA, FAST)]) == [Attempt(99, BEA, FAST)]


def test_turns_go_round_the_owners_oldest_first_within_each() -> None:
    lane = Lane(LaneLimits(slots=1, per_owner=1, per_target=1))
    # ann's attempts are all older than bea's and cy's.
    due = attempts(ANN, SLOW, 3, 10) + attempts(BEA, FAST, 3, 20) + attempts(CY, "", 2, 30)
    order: list[int] = []
    while due:
        (started,) = lane.take(due)
        order.append(started.delivery_id)
        lane.ended(started.delivery_id)
        due.remove(started)
    assert order == [10, 20, 30, 11, 21, 31, 12, 22]


def test_within_an_owner_the_targets_take_turns() -> None:
    lane = Lane(WEBHOOKS)
    due = [*attempts(ANN, SLOW, 5, 10), Attempt(20, ANN, FAST)]
    started = lane.take(due)
    # Her newest attempt, to another receiver, is second: not behind all five.
    assert [a.delivery_id for a in started] == [10, 20, 11, 12]


def test_a_waiting_attempt_is_neither_dropped_nor_started_twice() -> None:
    lane = Lane(LaneLimits(slots=2, per_owner=2, per_target=1))
    due = attempts(ANN, SLOW, 3, 10)
    assert [a.delivery_id for a in lane.take(due)] == [10]
    assert lane.take(due) == []  # 10 runs (given again), 11 and 12 wait for the target
    lane.ended(10)
    due.remove(Attempt(10, ANN, SLOW))
    assert [a.delivery_id for a in lane.take(due)] == [11]
    lane.ended(11)
    lane.ended(11)  # told twice: counted once
    assert [a.delivery_id for a in lane.take(due[1:])] == [12]
    assert list(lane.running) == [12]


def test_a_lane_keeps_only_the_turns_of_owners_with_work() -> None:
    lane = Lane(LaneLimits(slots=2, per_owner=1, per_target=2))
    for owner in range(1000):
        (started,) = lane.take([Attempt(owner, owner, "")])
        lane.ended(started.delivery_id)
    lane.take([Attempt(5000, ANN, "")])
    assert len(lane._owner_turn) == 1 and len(lane._target_turn) == 1
    assert not lane._owners - Counter({ANN: 1}) and not lane._targets


@pytest.mark.parametrize(("slots", "per_owner", "per_target"), [(4, 5, 1), (4, 0, 1), (4, 2, 9)])
def test_a_cap_must_be_from_one_to_the_slots(slots: int, per_owner: int, per_target: int) -> None:
    with pytest.raises(ValueError, match="from 1 to its slots"):
        LaneLimits(slots, per_owner, per_target)


def test_random_traffic_keeps_the_caps_idles_no_slot_and_serves_the_small_first() -> None:
    """Owners and targets at random, owner 1 flooding, attempts ending at random: the caps
    always hold, a take leaves a slot free only when no waiting attempt may have it, and
    the owners who ask little wait far less than the one who floods; once the flood
    stops, every attempt starts."""
    rng = random.Random(47)
    lane = Lane(WEBHOOKS)
    waiting: list[Attempt] = []
    came: dict[int, int] = {}
    waited: dict[int, list[int]] = {}
    for tick in range(5000):
        if tick < 1500:  # owner 1 asks twice what her share serves; 2 to 4 a little
            arrivals = [1, 1] + [owner for owner in (2, 3, 4) if rng.random() < 0.1]
            for owner in arrivals:
                target = rng.choice([SLOW, SLOW, FAST, "c:80", "d:80"])
                waiting.append(Attempt(len(came), owner, target))
                came[len(came)] = tick
        for started in lane.take(waiting):
            waiting.remove(started)
            waited.setdefault(started.owner, []).append(tick - came[started.delivery_id])
        owners = Counter(a.owner for a in lane.running.values())
        targets = Counter(a.target for a in lane.running.values())
        assert len(lane.running) <= WEBHOOKS.slots
        assert max(owners.values(), default=0) <= WEBHOOKS.per_owner
        assert max(targets.values(), default=0) <= WEBHOOKS.per_target
        if not lane.full:  # nothing waiting could have started
            assert all(
                owners[a.owner] >= WEBHOOKS.per_owner or targets[a.target] >= WEBHOOKS.per_target
                for a in waiting
            )
        for delivery_id in list(lane.running):
            if rng.random() < 0.25:
                lane.ended(delivery_id)
    assert not waiting and sum(map(len, waited.values())) == len(came)
    flooded = sorted(waited[1])[len(waited[1]) // 2]
    assert flooded > 100  # owner 1's attempts queued up: the others had to pass them
    # Each of the others' waited a few ends of attempts at most (one to its target).
    assert all(max(waited[owner]) <= 10 for owner in (2, 3, 4)), waited
