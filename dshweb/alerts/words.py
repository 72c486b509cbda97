"""An alert's words in its owner's language: what fired (the summary, from the reading's
``said`` and ``figures``), and the email's and Slack message's own words. A rule keeps the
language its owner saved it in (:attr:`~dshweb.alerts.models.AlertRule.language`); the
webhook's JSON keeps its keys, and its ``summary`` is in that language too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from dshweb.core.alerts.conditions import Reading
from dshweb.words import BANDS, named

SUMMARIES = {
    "band": _("context %(band)s: %(percent)s%% (%(used)s of %(window)s tokens)"),
    "band-below": _(
        "context %(band)s: %(percent)s%% (%(used)s of %(window)s tokens, "
        "%(headroom)s below the compaction point)"
    ),
    "band-past": _(
        "context %(band)s: %(percent)s%% (%(used)s of %(window)s tokens, "
        "%(headroom)s past the compaction point)"
    ),
    "cache-low": _("cache hits %(percent)s of prompt tokens over the last %(window)s steps"),
    "reader-error": _("the log cannot be read: %(error)s"),
    "fold": _("%(kind)s: %(before)s → %(after)s tokens"),
    "fold-failed": _("%(kind)s failed: %(error)s"),
    "fold-kind": _("%(kind)s"),
    "session-cost": _("session cost %(cost)s, past %(amount)s"),
    "session-cost-partial": _(
        "session cost %(cost)s, past %(amount)s (partial: a model without a price is not counted)"
    ),
    "day-cost": _("cost on %(day)s in home %(home)s: %(cost)s, past %(amount)s"),
    "day-cost-partial": _(
        "cost on %(day)s in home %(home)s: %(cost)s, past %(amount)s "
        "(partial: a model without a price is not counted)"
    ),
}
COMPACTION_PHRASES = {
    "automatic": _("automatic compaction"),
    "manual": _("manual compaction"),
    "overflow": _("overflow compaction"),
    "prune": _("prune pass"),
}


def summary_text(reading: Reading) -> str:
    """What fired, in the active language (the reading's English words for a sentence
    this table does not know)."""
    figures = dict(reading.figures)
    if reading.said == "fold-soon":
        steps = int(str(figures["steps"]))
        return (
            ngettext(
                "fold expected in ~%(steps)s step (%(within)s)",
                "fold expected in ~%(steps)s steps (%(within)s)",
                steps,
            )
            % figures
        )
    sentence = SUMMARIES.get(reading.said)
    if sentence is None:
        return reading.summary
    if "band" in figures:
        figures["band"] = named(BANDS, figures["band"])
    if "kind" in figures:
        figures["kind"] = named(COMPACTION_PHRASES, figures["kind"])
    return str(sentence) % figures


def summary_in(language: str, reading: Reading) -> str:
    """What fired, in ``language``."""
    with in_language(language):
        return summary_text(reading)


@contextmanager
def in_language(language: str) -> Iterator[None]:
    """The words of what runs inside in ``language`` (the default one when empty)."""
    with translation.override(language or settings.LANGUAGE_CODE):
        yield
