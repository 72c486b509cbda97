"""How much one read of a log may fold (:mod:`dshweb.core.log.reader`).

Apart from the reader so that a caller can name a budget without importing the decoder
(msgspec): ``manage.py dsh_snapshot`` on a home without sessions never decodes a line.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Budget:
    """The most one ``read()`` folds before it returns with ``Batch.more`` set: events
    handed on, and bytes decoded (blank lines and skipped records cost time too)."""

    events: int
    bytes: int


UNBOUNDED = Budget(events=sys.maxsize, bytes=sys.maxsize)
