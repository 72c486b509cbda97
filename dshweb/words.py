"""The names a person reads for DSH's own words: bands, the parts of the context, the kinds
of compaction, why there is no forecast. One table each, translated (``dshweb/locale``); the
values the code, the API and the data-* attributes use stay DSH's English words.

The Chinese band names read in the order of the pressure they name (充裕 < 适中 < 紧张 <
临界), one name per band on every page, alert and message (docs/development.md,
"Translations"); the line ``dsh-context-truth`` writes for the model keeps its own words
(``dshweb.core.settings.occupancy.text``).
"""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

BANDS = {
    "ample": pgettext_lazy("band", "ample"),
    "moderate": pgettext_lazy("band", "moderate"),
    "tight": pgettext_lazy("band", "tight"),
    "critical": pgettext_lazy("band", "critical"),
    "unknown": pgettext_lazy("band", "unknown"),
}

PARTS = {
    "system": pgettext_lazy("context part", "system"),
    "tools": pgettext_lazy("context part", "tools"),
    "messages": pgettext_lazy("context part", "messages"),
}

COMPACTION_KINDS = {
    "automatic": pgettext_lazy("fold kind", "automatic"),
    "manual": pgettext_lazy("fold kind", "manual"),
    "overflow": pgettext_lazy("fold kind", "overflow"),
    "prune": pgettext_lazy("fold kind", "prune"),
    "mixed": pgettext_lazy("fold kind", "several kinds"),
}

NO_FORECAST = {
    "no compaction point": _("no compaction point"),
    "too few steps": _("too few steps"),
    "not growing": _("not growing"),
    "idle": _("idle"),
    "unknown": _("unknown"),
}


def named(table: Mapping[str, object], value: object) -> str:
    """``value``'s name from ``table`` in the active language; a value the table does not
    know (a newer DSH's word) as it is."""
    key = str(value)
    return str(table.get(key, key))
