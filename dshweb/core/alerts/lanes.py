"""Whose delivery attempt goes next: fair turns within a lane of a few slots.

Each way of telling (browser notices, emails, webhooks) has a :class:`Lane` of its own,
so one never waits for another's slots. A lane runs at most ``slots`` attempts at once,
at most ``per_owner`` of one rule owner's and at most ``per_target`` to one target (a
webhook's ``host:port``), both below ``slots``: one owner or one receiver never holds
every slot, however many rules aim at it. :meth:`Lane.take` is given the attempts that are
due, oldest first, and starts what the limits allow in fair turns: the owner served least
recently goes first (one who has not been served yet before anyone), then, within that
owner, the target served least recently, then the oldest attempt. What it does not start
is not failed nor dropped: it is still due where it came from, and is given again at the
next look, in its turn. A lane keeps only what runs and the turns of owners and targets
that have work; it holds no queue of its own.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass

Key = tuple[int, str]
"""(owner, target): one owner's attempts to one target."""


@dataclass(frozen=True, slots=True)
class LaneLimits:
    slots: int
    """Attempts at once in the lane."""
    per_owner: int
    """Attempts at once of one rule owner's."""
    per_target: int
    """Attempts at once to one target (of any owner's)."""

    def __post_init__(self) -> None:
        if not 1 <= self.per_owner <= self.slots or not 1 <= self.per_target <= self.slots:
            raise ValueError(f"a lane's caps are from 1 to its slots: {self}")


@dataclass(frozen=True, slots=True)
class Attempt:
    """A delivery due to be attempted."""

    delivery_id: int
    owner: int
    target: str = ""
    """Where the attempt goes (a webhook's ``host:port``); empty: capped by owner only."""


class Lane:
    def __init__(self, limits: LaneLimits) -> None:
        self.limits = limits
        self.running: dict[int, Attempt] = {}
        self._owners: Counter[int] = Counter()
        self._targets: Counter[str] = Counter()
        self._clock = 0
        self._owner_turn: dict[int, int] = {}
        """When each owner with work was last served (a tick of ``_clock``)."""
        self._target_turn: dict[Key, int] = {}

    @property
    def full(self) -> bool:
        return len(self.running) >= self.limits.slots

    def take(self, due: Iterable[Attempt]) -> list[Attempt]:
        """The attempts of ``due`` (oldest first) to start now, in turn; each then runs
        until :meth:`ended`. One already running is passed over."""
        waiting: dict[int, dict[str, deque[tuple[int, Attempt]]]] = {}
        for position, attempt in enumerate(due):
            if attempt.delivery_id not in self.running:
                targets = waiting.setdefault(attempt.owner, {})
                targets.setdefault(attempt.target, deque()).append((position, attempt))
        self._forget_idle(waiting)
        started: list[Attempt] = []
        while not self.full and (chosen := self._next(waiting)) is not None:
            self._start(chosen)
            started.append(chosen)
        return started

    def ended(self, delivery_id: int) -> None:
        attempt = self.running.pop(delivery_id, None)
        if attempt is None:
            return
        self._owners[attempt.owner] -= 1
        if attempt.target:
            self._targets[attempt.target] -= 1
        self._owners += Counter()  # drop the zeros
        self._targets += Counter()

    def _next(self, waiting: dict[int, dict[str, deque[tuple[int, Attempt]]]]) -> Attempt | None:
        """The waiting attempt whose turn it is, taken off ``waiting``; None: none may start."""
        best: tuple[int, int, int] | None = None
        best_queue: deque[tuple[int, Attempt]] | None = None
        for owner, targets in waiting.items():
            if self._owners[owner] >= self.limits.per_owner:
                continue
            for target, queue in targets.items():
                if not queue or (target and self._targets[target] >= self.limits.per_target):
                    continue
                turn = (
                    self._owner_turn.get(owner, 0),
                    self._target_turn.get((owner, target), 0),
                    queue[0][0],
                )
                if best is None or turn < best:
                    best, best_queue = turn, queue
        return None if best_queue is None else best_queue.popleft()[1]

    def _start(self, attempt: Attempt) -> None:
        self.running[attempt.delivery_id] = attempt
        self._owners[attempt.owner] += 1
        if attempt.target:
            self._targets[attempt.target] += 1
        self._clock += 1
        self._owner_turn[attempt.owner] = self._clock
        self._target_turn[attempt.owner, attempt.target] = self._clock

    def _forget_idle(self, waiting: dict[int, dict[str, deque[tuple[int, Attempt]]]]) -> None:
        """Forget the turns of owners and targets with nothing waiting nor running: one
        that comes back is served as new (what a lane keeps stays bounded)."""
        busy = {(a.owner, a.target) for a in self.running.values()}
        busy |= {(owner, target) for owner, targets in waiting.items() for target in targets}
        owners = {owner for owner, _ in busy}
        self._owner_turn = {o: t for o, t in self._owner_turn.items() if o in owners}
        self._target_turn = {k: t for k, t in self._target_turn.items() if k in busy}
