"""The pure core: reading DSH's files and folding them into what is shown, no Django.

Its packages, each a part of the data flow, in the order they may import each other
(import-linter checks it, ``pyproject.toml``):

- :mod:`.log`: reading DSH's files (the home, a log's frames, its lines as events);
- :mod:`.profile`: reading a profile as DSH does (patch layers, the plugins' schemas, what
  the compaction engine and context-truth's bands run with);
- :mod:`.fold`: the projections (meter, compaction point, pace, ledger, gauge), one
  session, a whole home, and checkpoints of the fold state;
- :mod:`.listing` and :mod:`.settings`, on top and apart: the sessions list's query and
  pages, and the settings editor (the occupancy line's preview, ``dsh --dump-config``,
  patch-file edits), which the fold never imports.

:mod:`.errors` holds the one base class of what they report. Plain dataclasses in, plain
dataclasses out: everything here is testable with ``tmp_path`` alone.
"""
