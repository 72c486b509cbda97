"""A home's pace on each model: what a session's forecast goes by before it has steps.

A session's first steps say nothing yet of its own pace (the forecast needs
:data:`~dshweb.core.fold.forecast.NEED` of them); this home's other sessions on the same
model say something: how much their recent steps grew the measure the engine checks.
:class:`HomePaces` keeps, per model, the recent growth of the :data:`KEPT` sessions that
stepped last, updated as each session folds, so a young session's prior is read in a
few dozen steps, never by scanning the home's sessions.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from dshweb.core.fold.forecast import NEED, RECENT

PRIOR_SESSIONS = 4
"""The other sessions whose recent steps make a young session's prior."""
KEPT = PRIOR_SESSIONS + 1
"""Sessions kept per model: one more, so that leaving out the young one leaves enough."""


@dataclass(frozen=True, slots=True)
class _Paced:
    last_time: int
    key: Hashable
    growth: tuple[int, ...]


@dataclass(slots=True)
class HomePaces:
    """Per model, the last :data:`RECENT` steps' growth of the sessions that stepped last.

    A session that stops being among them is not kept; one that goes away is dropped, and
    its place is taken by the next session of the model that steps."""

    by_model: dict[str, list[_Paced]] = field(default_factory=dict)
    model_of: dict[Hashable, str] = field(default_factory=dict)

    def note(
        self, key: Hashable, model: str | None, last_time: int | None, growth: Sequence[int]
    ) -> None:
        """Session ``key`` on ``model``, last active at ``last_time``, grew by ``growth``
        (oldest first): kept when it has :data:`NEED` steps and is among the latest."""
        if model is None or len(growth) < NEED:
            return
        self.forget(key)
        kept = self.by_model.setdefault(model, [])
        kept.append(_Paced(last_time or 0, key, tuple(growth[-RECENT:])))
        # Latest first, ties by key: the same sessions kept whatever order they fold in
        # (a restart's, a spread read's; copies of one log end at the same time).
        kept.sort(key=lambda paced: (paced.last_time, str(paced.key)), reverse=True)
        self.model_of[key] = model
        for dropped in kept[KEPT:]:
            self.model_of.pop(dropped.key, None)
        del kept[KEPT:]

    def forget(self, key: Hashable) -> None:
        model = self.model_of.pop(key, None)
        if model is not None:
            kept = self.by_model[model]
            kept[:] = [paced for paced in kept if paced.key != key]

    def prior(self, key: Hashable, model: str | None) -> tuple[int, ...]:
        """The steps of up to :data:`PRIOR_SESSIONS` other sessions on ``model`` (those
        active last), one after another; empty when there are none."""
        if model is None:
            return ()
        others = [paced for paced in self.by_model.get(model, ()) if paced.key != key]
        return tuple(g for paced in others[:PRIOR_SESSIONS] for g in paced.growth)
