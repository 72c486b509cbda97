"""Reading a DSH profile as DSH reads it: its patch layers, and what they set.

:mod:`.profile` is the profile as one value (its folder, its layers in order, its plugins
and their installed versions), :mod:`.dshyaml` reads YAML with js-yaml's rules,
:mod:`.patch` reads one patch file (``cordis.patch.yml``) into rows, :mod:`.layers` finds
the ``config`` the visible layers give a row, :mod:`.schema` checks a config against a
plugin's :mod:`.plugins` schema, and :mod:`.effective` gives what the compaction engine
and context-truth's bands run with. Reading only: editing a patch file is
:mod:`dshweb.core.settings`.
"""
