"""The occupancy line dsh-context-truth injects, rendered byte for byte for a preview.

:mod:`.line` puts it together (:func:`~.line.occupancy_line`), :mod:`.line_settings` says
what shapes it, :mod:`.figures` computes its numbers as the plugin's JavaScript does and
:mod:`.text` words it.
"""
