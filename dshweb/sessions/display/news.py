"""What a page says when a session's context moves while it is open: a fold that lands
(a note on the ring and in the list row, kept there as the page's updates replace the
ring and the row, faded out 12 s after it landed: ``--fold-landed-for`` in the
stylesheet) and, for a screen reader, the sentence its ``#announcements`` live region
reads when a fold lands or the band changes, or when the log starts over (a log replaced
by one that is read from its first event again: the demo's replay does it every loop),
which says so rather than the band it falls to with no reading yet.

Pure: a page's socket keeps what the page has heard (:class:`Heard`) and asks :func:`news` what
the new state brings, if anything. A page load says nothing: news is what changes while
a person watches.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _

from dshweb import words
from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.gauge import ContextGauge
from dshweb.core.fold.ledger import Ledger
from dshweb.sessions.display.figures import format_page_tokens


@dataclass(frozen=True, slots=True)
class Heard:
    """What a page has heard of a session: its band and its newest finished fold (the
    model is *told*, :mod:`dshweb.core.fold.told`; a page hears)."""

    band: str
    compaction_seq: int | None
    last_seq: int = -1
    """The newest event of the log then (a smaller one later: the log started over)."""

    @classmethod
    def of(cls, ledger: Ledger, gauge: ContextGauge, last_seq: int = -1) -> Heard:
        """What a page hears of the session as ``ledger`` and ``gauge`` have it, its log
        read through ``last_seq``."""
        compaction = newest_compaction(ledger)
        return cls(str(gauge.band), None if compaction is None else compaction.seq, last_seq)


def newest_compaction(ledger: Ledger) -> Compaction | None:
    """The newest finished fold that says what it freed (its before and after)."""
    for compaction in reversed(ledger.compactions):
        if (
            compaction.before is not None
            and compaction.after is not None
            and compaction.status == "done"
        ):
            return compaction
    return None


def compaction_sentence(compaction: Compaction) -> str:
    """``Folded just now: 13.1K → 9.1K`` (``Pruned …`` for a prune pass)."""
    said = {
        "before": format_page_tokens(compaction.before or 0),
        "after": format_page_tokens(compaction.after or 0),
    }
    if compaction.kind == "prune":
        return _("Pruned just now: %(before)s → %(after)s") % said
    return _("Folded just now: %(before)s → %(after)s") % said


def band_sentence(gauge: ContextGauge) -> str:
    """``Band now tight: 10.2K used, compaction point 12K``."""
    said = {
        "band": words.named(words.BANDS, gauge.band),
        "used": format_page_tokens(gauge.used or 0),
    }
    if gauge.threshold is None:
        return _("Band now %(band)s: %(used)s used") % said
    said["point"] = format_page_tokens(gauge.threshold)
    return _("Band now %(band)s: %(used)s used, compaction point %(point)s") % said


@dataclass(frozen=True, slots=True)
class News:
    sentence: str
    compaction: Compaction | None = None
    """The fold that landed (its note is shown), or None for a change of band."""


def restart_sentence(*, replayed: bool) -> str:
    """What a page says when the log it follows starts over from its first event."""
    if replayed:
        return _("The demo starts its recording over: this session plays again from the start.")
    return _("The log started over: this session is read again from its first event.")


def news(
    before: Heard | None,
    ledger: Ledger,
    gauge: ContextGauge,
    last_seq: int = -1,
    *,
    replayed: bool = False,
) -> News | None:
    """What changed since ``before`` that a person should hear: a log that started over
    (``last_seq`` below the one heard; ``replayed``: the demo's replay looped), else a new
    fold (what it freed), else a new band; nothing on a first look or when none moved."""
    if before is None:
        return None
    if 0 <= last_seq < before.last_seq:
        return News(restart_sentence(replayed=replayed))
    compaction = newest_compaction(ledger)
    if compaction is not None and compaction.seq != before.compaction_seq:
        return News(compaction_sentence(compaction), compaction)
    if str(gauge.band) != before.band:
        return News(band_sentence(gauge))
    return None
