"""``dsh web``: DSH's own web profile, the only way in for ``/compact`` (DSH_FACTS §7, §8).

Not to be confused with the compaction engine (``compaction-basic``), the DSH plugin that
folds a session and whose settings :mod:`dshweb.core.profile` reads: ``dsh web`` is the
process that runs it on request.

- :mod:`dshweb.dsh_web.client`: :class:`DshWebClient` speaks the web profile's API from a
  launch URL, checks a connection and runs ``/compact``, classifying every outcome.
- :mod:`dshweb.dsh_web.managed`: :class:`ManagedDshWeb` runs ``dsh --profile web`` for
  dshweb, restarts it with back-off when it dies, and stops it. Imported from there, not
  here: the settings check a launch URL with the client alone, before a refusal (issue 41).

Plain Python (no Django): the framework layers call into this package, never the
other way round. The launch URL carries a secret token; nothing here shows it.
"""

from __future__ import annotations

from dshweb.dsh_web.client import (
    CompactOutcome,
    CompactStatus,
    ConnectionCheck,
    ConnectionStatus,
    DshWebClient,
    DshWebError,
    DshWebTimeout,
    DshWebUnreachable,
    LaunchUrlError,
    NotDsh,
    RpcError,
    TokenRejected,
)

__all__ = [
    "CompactOutcome",
    "CompactStatus",
    "ConnectionCheck",
    "ConnectionStatus",
    "DshWebClient",
    "DshWebError",
    "DshWebTimeout",
    "DshWebUnreachable",
    "LaunchUrlError",
    "NotDsh",
    "RpcError",
    "TokenRejected",
]
