"""How big each request of a session was, by model: the distributions an OpenTelemetry
``gen_ai.client.token.usage`` histogram reports (:mod:`dshweb.otlp`).

Per route (model, provider) the fold keeps, for the *input* of each request (its uncached
input, cache reads and cache writes together: what the GenAI conventions count as input)
and for its *output*, how many requests fell in each bucket of :data:`TOKEN_BOUNDS`,
their sum and their count; and the cache reads and writes added up. A few dozen numbers
per model, whatever the session's length, and exactly ``tokenUsage`` split by route: a
usage sample that replaces the one before it (DSH_FACTS §6, the same turn and step) takes
that one out of its buckets first, as the meter takes it out of the totals.

:class:`RequestSizesCollector` is fold-side state, fed each event after the meter folds
it; :meth:`~RequestSizesCollector.result` freezes it into :class:`RouteSizes` values.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from dshweb.core.fold.billing import Route
from dshweb.core.fold.meter import SessionMeter, Usage

TOKEN_BOUNDS: tuple[int, ...] = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
"""The bucket bounds the GenAI conventions give ``gen_ai.client.token.usage``: a value
``v`` falls in the first bucket whose bound is ``>= v`` (OTLP's explicit bounds), the
last bucket holding what lies above them all."""


def bucket_of(tokens: int) -> int:
    return bisect_left(TOKEN_BOUNDS, tokens)


@dataclass(frozen=True, slots=True)
class Sizes:
    """One distribution: the requests per bucket (``len(TOKEN_BOUNDS) + 1`` of them),
    their tokens in all and how many requests."""

    buckets: tuple[int, ...] = (0,) * (len(TOKEN_BOUNDS) + 1)
    total: int = 0
    count: int = 0


@dataclass(frozen=True, slots=True)
class RouteSizes:
    """A route's requests: the input (cached tokens included) and output of each, bucketed,
    and its cache reads and writes added up."""

    route: Route
    input: Sizes
    output: Sizes
    cache_read: int
    cache_write: int


@dataclass(slots=True)
class _Tally:
    input: list[int] = field(default_factory=lambda: [0] * (len(TOKEN_BOUNDS) + 3))
    output: list[int] = field(default_factory=lambda: [0] * (len(TOKEN_BOUNDS) + 3))
    """Each: the buckets, then the sum and the count."""
    cache_read: int = 0
    cache_write: int = 0

    def add(self, usage: Usage, sign: int) -> None:
        for tally, tokens in ((self.input, usage.prompt), (self.output, usage.output)):
            tally[bucket_of(tokens)] += sign
            tally[-2] += sign * tokens
            tally[-1] += sign
        self.cache_read += sign * usage.cache_read
        self.cache_write += sign * usage.cache_write


def _sizes(tally: list[int]) -> Sizes:
    return Sizes(tuple(tally[:-2]), tally[-2], tally[-1])


@dataclass(slots=True)
class RequestSizesCollector:
    """Fold-side state of the requests' sizes; see the module docstring."""

    routes: dict[Route, _Tally] = field(default_factory=dict)
    last: Route | None = None
    """Where the last sample was counted (a sample that replaces it is taken off there)."""

    def observe(self, meter: SessionMeter) -> None:
        """Look at the event ``meter`` has just folded."""
        sample = meter.sample
        if sample is None:
            return
        if sample.replaced is not None and self.last is not None:
            self.routes[self.last].add(sample.replaced, -1)
        route = (sample.slot[0], sample.slot[1])
        tally = self.routes.get(route)
        if tally is None:
            tally = self.routes[route] = _Tally()
        tally.add(sample.usage, 1)
        self.last = route

    def result(self) -> tuple[RouteSizes, ...]:
        """Each route with requests, in the order they first answered."""
        return tuple(
            RouteSizes(route, _sizes(t.input), _sizes(t.output), t.cache_read, t.cache_write)
            for route, t in self.routes.items()
            if t.input[-1]
        )
