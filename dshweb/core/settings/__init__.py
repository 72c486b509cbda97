"""The settings editor: what a change to a profile's plugin settings would do, and making it.

:mod:`.occupancy` renders the line dsh-context-truth would inject under given settings
(the settings page's preview); :mod:`.dshconfig` asks the real ``dsh`` for the composed
profile (``--dump-config``, its JSON schema, where each value comes from, whether
context-truth is present); :mod:`.patchfile` edits one row of a patch file and writes it
atomically. Reading a profile is :mod:`dshweb.core.profile`'s, and the fold never
imports this package.
"""
