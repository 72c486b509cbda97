"""``dsh web``: DSH's own web profile, the only way in for ``/compact`` (DSH_FACTS §7, §8).

Not to be confused with the compaction engine (``compaction-basic``), the DSH plugin that
folds a session and whose settings :mod:`dshweb.core.profile` reads: ``dsh web`` is the
process that runs it on request.

- :mod:`dshweb.dsh_web.client`: :class:`DshWebClient` speaks the web profile's API from a
  launch URL, checks a connection and runs ``/compact``, classifying every outcome.
- :mod:`dshweb.dsh_web.launch_url`: a launch URL read and checked, and the client's
  errors, without its HTTP stack (the settings check one at every start).
- :mod:`dshweb.dsh_web.managed`: :class:`ManagedDshWeb` runs ``dsh --profile web`` for
  dshweb, restarts it with back-off when it dies, and stops it.

Each is imported from its own module: the package imports nothing, so a start that only
checks a launch URL does not load the client.

Plain Python (no Django): the framework layers call into this package, never the
other way round. The launch URL carries a secret token; nothing here shows it.
"""
