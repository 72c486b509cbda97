"""Folding a session's events into what is shown: DSH's own projections and ours.

:mod:`.pricing` and :mod:`.meter` price the surface as the host does (token usage,
context pressure, breakdown); :mod:`.compaction` places the compaction point and
``measure()``; :mod:`.pace` keeps the per-step growth, :mod:`.ledger` every fold
(:mod:`.compactions` its records) and the pressure timeline; :mod:`.session` follows one log
(a :class:`~.session.SessionTracker`) and freezes it into a :class:`~.session.SessionSnapshot`;
:mod:`.index` follows a whole home; :mod:`.checkpoint` keeps a tracker's state across
restarts; :mod:`.progress` counts a first round. Events in, plain values out: nothing here
renders, and nothing reads the settings editor.
"""
