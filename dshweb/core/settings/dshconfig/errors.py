"""The one error of :mod:`dshweb.core.settings.dshconfig`, a
:class:`~dshweb.core.errors.DshError`."""

from __future__ import annotations

from dshweb.core.errors import DshError


class DshConfigError(DshError):
    """``dsh`` could not be run, failed, or printed something unexpected."""
