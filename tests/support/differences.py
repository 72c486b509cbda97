"""Where two values differ, as short readable lines instead of one giant diff.

``differences(ours, theirs)`` is empty exactly when ``ours == theirs``. Mappings,
sequences of the same length and dataclasses are walked part by part, so each difference
names the path to it (``contextPressure.pressureTokens``, ``nodes[3].tokens``; two
sequences of different lengths differ in ``nodes (length)`` and in their common part);
anything else, or a container that differs while all its parts are equal, is one
difference at its own path.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()
"""The value on the side of a mapping that lacks a key."""

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxdict = 4
_repr.maxlevel = 3


@dataclass(frozen=True, slots=True)
class Difference:
    path: str
    ours: Any
    theirs: Any

    def line(self, ours: str = "ours", theirs: str = "theirs") -> str:
        """``path: ours 1, theirs 2`` with each value's repr cut short."""
        where = self.path or "(the whole value)"
        return f"{where}: {ours} {_repr.repr(self.ours)}, {theirs} {_repr.repr(self.theirs)}"


def differences(ours: Any, theirs: Any, path: str = "") -> list[Difference]:
    """Every differing part of ``ours`` and ``theirs``, by its path below ``path``."""
    if ours == theirs:
        return []
    found = list(_parts(ours, theirs, path))
    return found or [Difference(path, ours, theirs)]


def _parts(ours: Any, theirs: Any, path: str) -> Iterator[Difference]:
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            yield from differences(
                ours.get(key, ABSENT), theirs.get(key, ABSENT), _join(path, str(key))
            )
    elif _is_sequence(ours) and _is_sequence(theirs) and type(ours) is type(theirs):
        if len(ours) != len(theirs):
            yield Difference(f"{path} (length)", len(ours), len(theirs))
        for index, (one, other) in enumerate(zip(ours, theirs, strict=False)):
            yield from differences(one, other, f"{path}[{index}]")
    elif (
        dataclasses.is_dataclass(ours) and not isinstance(ours, type) and type(ours) is type(theirs)
    ):
        for field in dataclasses.fields(ours):
            if not field.compare:
                continue  # not part of the dataclass's equality
            yield from differences(
                getattr(ours, field.name), getattr(theirs, field.name), _join(path, field.name)
            )


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def listed(lines: Sequence[str], shown: int) -> str:
    """The first ``shown`` of ``lines``, indented, and how many more there are."""
    kept = [f"  {line}" for line in lines[:shown]]
    if len(lines) > shown:
        kept.append(f"  … and {len(lines) - shown:,} more")
    return "\n".join(kept)


SHOWN = 12
"""Lines a failure lists."""


def fail_on(lines: Sequence[str], heading: str, shown: int = SHOWN) -> None:
    """Fail the test, when there are ``lines``, with ``heading`` and the first of them
    (no traceback: the lines say where)."""
    if lines:
        pytest.fail(f"{heading}:\n{listed(lines, shown)}", pytrace=False)
