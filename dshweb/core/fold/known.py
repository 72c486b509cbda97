"""What dshweb knows of one setting the engine went by, and where it learned it.

A session's log records some of the settings its engine runs with (the window in
``request/context``, the reserved completion in ``request/header``) and none of the
others: the compaction point, the retain, the pruner's cut come from the profile the
session runs under, unless a ``dsh --patch`` changed them, which the log never records
(DSH_FACTS §12). The engine's own acts in the log then bound them instead (the point by
its decisions, the retain by the tails its summaries kept, the cut by the results it
pruned and left whole). Every estimate says which it went by:

- ``recorded``: the log says it;
- ``profile``: the session's composed profile gives it, and nothing in the log
  contradicts it;
- ``catalogue``: the profile's model catalogue for the model the header names, before
  the log records the window;
- ``inferred``: the engine's acts bound it (``low``..``high``), the profile's value
  being ruled out or absent;
- ``unknown``: nothing says it yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dshweb.core.profile.pruner import PruneCut

Source = Literal["recorded", "profile", "catalogue", "inferred", "unknown"]


@dataclass(frozen=True, slots=True)
class Known:
    """A setting's value, or the range it lies in (both ends included); ``None`` at an
    end that nothing bounds. Never inverted: ``low <= high`` where both are given."""

    low: int | None = None
    high: int | None = None
    source: Source = "unknown"

    def __post_init__(self) -> None:
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"an inverted range: {self.low}..{self.high}")

    @classmethod
    def exactly(cls, value: int, source: Source) -> Known:
        return cls(value, value, source)

    @property
    def exact(self) -> int | None:
        """The value, when only one is possible."""
        return self.low if self.low is not None and self.low == self.high else None

    def holds(self, value: int) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def as_json(self) -> dict[str, int | str | None]:
        return {"low": self.low, "high": self.high, "source": self.source}


UNKNOWN = Known()


@dataclass(frozen=True, slots=True)
class CutKnown:
    """The pruner as the preview goes by it: ``on`` (``None``: nothing says), its
    threshold's range, its head and tail (each with its source)."""

    on: bool
    threshold: Known
    head: Known
    tail: Known

    def likeliest(self) -> PruneCut | None:
        """A cut to simulate the pruner with where a forecast needs one: the exact one, or
        at its threshold's low end; ``None`` when off or its head or tail is unknown."""
        head, tail, low = self.head.exact, self.tail.exact, self.threshold.low
        if not self.on or head is None or tail is None or low is None:
            return None
        return PruneCut(self.threshold.exact or low, head, tail)

    def as_json(self) -> dict[str, Any]:
        return {
            "on": self.on,
            "thresholdChars": self.threshold.as_json(),
            "headChars": self.head.as_json(),
            "tailChars": self.tail.as_json(),
        }


OFF = CutKnown(False, Known(), Known(), Known())
