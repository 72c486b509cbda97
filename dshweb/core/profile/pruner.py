"""The tool-result pruner's cut: which results it prunes, and what it keeps of them.

``tool-result-pruner`` (the runtime's ``ToolResultPruner``) replaces the middle of every
surface tool result whose text blocks hold more than ``thresholdChars`` code points by
:data:`~dshweb.core.profile.plugins.PRUNE_MARKER`, keeping the first ``headChars`` and
the last ``tailChars``. Its config keys are exactly those three; it throws at start on an
unknown key, a value out of range, or a cut that would not be smaller
(``headChars + 39 + tailChars > thresholdChars``), and DSH then runs without it, as it
runs without a ``compaction-basic`` it refuses. :class:`PruneCut` is the one reading of
that config: the fold prices prunes with it (:func:`~dshweb.core.fold.pricing.pruned_price`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dshweb.core.errors import DshError
from dshweb.core.profile.plugins import TOOL_RESULT_PRUNER_SCHEMA
from dshweb.core.profile.schema import default_int, refusals, validate


class PrunerConfigError(DshError):
    """A ``tool-result-pruner`` config DSH refuses: the pruner does not start at all."""


@dataclass(frozen=True, slots=True)
class PruneCut:
    """The pruner's budgets, in code points; defaults: its schema's (8,192 / 4,096 / 1,024,
    the runtime's ``DEFAULTS``)."""

    threshold: int = default_int(TOOL_RESULT_PRUNER_SCHEMA, "thresholdChars")
    """A result whose text is longer than this is pruned."""
    head: int = default_int(TOOL_RESULT_PRUNER_SCHEMA, "headChars")
    tail: int = default_int(TOOL_RESULT_PRUNER_SCHEMA, "tailChars")

    @classmethod
    def from_config(cls, config: Mapping[str, object] | None) -> PruneCut:
        """The cut a row's (whole, replacing) ``config`` gives; ``None`` or ``{}``: the
        defaults.

        Raises :class:`PrunerConfigError`, naming every problem, for a config the pruner
        refuses or one set by a ``!!js`` expression, which dshweb does not evaluate.
        """
        checked = validate(TOOL_RESULT_PRUNER_SCHEMA, config or {})
        problems = refusals(checked)
        if problems:
            raise PrunerConfigError("; ".join(problems))
        merged = checked.config  # every key: as given, else its default
        return cls(
            threshold=_whole(merged["thresholdChars"]),
            head=_whole(merged["headChars"]),
            tail=_whole(merged["tailChars"]),
        )

    def as_json(self) -> dict[str, int]:
        """The cut as the pruner's config keys name it."""
        return {"thresholdChars": self.threshold, "headChars": self.head, "tailChars": self.tail}


def _whole(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):  # validate() made it one
        raise TypeError(f"not a whole number: {value!r}")
    return value


DEFAULT_CUT = PruneCut()
"""The pruner on its defaults (no visible layer sets its config)."""
