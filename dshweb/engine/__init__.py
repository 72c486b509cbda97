"""The engine: DSH's own web profile, the only way in for ``/compact`` (DSH_FACTS §7, §8).

- :mod:`dshweb.engine.client`: :class:`EngineClient` speaks the web profile's API from a
  launch URL, checks a connection and runs ``/compact``, classifying every outcome.
- :mod:`dshweb.engine.managed`: :class:`ManagedEngine` runs ``dsh --profile web`` for
  dshweb, restarts it with back-off when it dies, and stops it.

Plain Python (no Django): the framework layers call into this package, never the
other way round. The launch URL carries a secret token; nothing here shows it.
"""

from __future__ import annotations

from dshweb.engine.client import (
    CompactOutcome,
    CompactStatus,
    ConnectionCheck,
    ConnectionStatus,
    EngineClient,
    EngineError,
    EngineTimeout,
    EngineUnreachable,
    LaunchUrlError,
    NotDsh,
    RpcError,
    TokenRejected,
)
from dshweb.engine.managed import EnginePhase, EngineState, ManagedEngine

__all__ = [
    "CompactOutcome",
    "CompactStatus",
    "ConnectionCheck",
    "ConnectionStatus",
    "EngineClient",
    "EngineError",
    "EnginePhase",
    "EngineState",
    "EngineTimeout",
    "EngineUnreachable",
    "LaunchUrlError",
    "ManagedEngine",
    "NotDsh",
    "RpcError",
    "TokenRejected",
]
