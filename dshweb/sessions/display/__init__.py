"""How the dashboard shows what the core folded: pure functions and plain values, no Django.

:mod:`.figures` (token figures, ratios, element ids), :mod:`.ring` (the ring's arcs and
the breakdown's shares), :mod:`.timeline` (the pressure timeline laid out as SVG
geometry), :mod:`.ledger_pages` (the ledger a page at a time), :mod:`.ledger_rows` (the
downloads' rows) and :mod:`.compact_status` (the Compact button's status line). Views,
fragments and template filters call these; they read the core's values and never fold.
"""
