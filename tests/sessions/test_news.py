"""What an open page hears (sessions/display/news.py): a fold that lands, with what it
freed, else a change of band; nothing on a first look, nothing when neither moved."""

from __future__ import annotations

from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.gauge import Band, ContextGauge
from dshweb.core.fold.ledger import Ledger
from dshweb.sessions.display.news import Heard, News, news


def _gauge(used: int, band: Band, threshold: int | None = 12_000) -> ContextGauge:
    headroom = None if threshold is None else threshold - used
    return ContextGauge(used, 24_000, round(used * 100 / 24_000), threshold, headroom, band)


def _ledger(*compactions: Compaction) -> Ledger:
    return Ledger(compactions=compactions)


def _compaction(
    seq: int, before: int | None, after: int | None, kind: str = "automatic"
) -> Compaction:
    """A fold as the ledger keeps it: finished (an end) once it has an after."""
    end = None if after is None else seq + 3
    return Compaction(kind=kind, seq=seq, time=seq * 1000, before=before, after=after, end_seq=end)  # type: ignore[arg-type]


def test_a_first_look_hears_nothing() -> None:
    assert news(None, _ledger(_compaction(5, 13_100, 9_100)), _gauge(9_100, Band.MODERATE)) is None


def test_nothing_moved_nothing_heard() -> None:
    ledger, gauge = _ledger(_compaction(5, 13_100, 9_100)), _gauge(9_100, Band.MODERATE)
    assert news(Heard.of(ledger, gauge), ledger, gauge) is None


def test_a_compaction_that_lands_is_heard_with_what_it_freed() -> None:
    gauge = _gauge(11_000, Band.TIGHT)
    before = Heard.of(_ledger(_compaction(5, 13_100, 9_100)), gauge)
    landed = _compaction(40, 13_149, 9_051)
    heard = news(
        before, _ledger(_compaction(5, 13_100, 9_100), landed), _gauge(9_051, Band.MODERATE)
    )
    assert heard == News("Folded just now: 13K → 9.1K", landed)  # the fold before the band


def test_a_prune_pass_is_heard_as_a_prune() -> None:
    gauge = _gauge(11_000, Band.TIGHT)
    pruned = _compaction(7, 11_000, 8_400, kind="prune")
    heard = news(
        Heard.of(Ledger(), gauge),
        _ledger(
            pruned,
        ),
        gauge,
    )
    assert heard is not None and heard.sentence == "Pruned just now: 11K → 8.4K"


def test_a_compaction_still_running_is_not_heard_yet() -> None:
    gauge = _gauge(11_000, Band.TIGHT)
    running = _ledger(_compaction(9, 13_000, None))
    assert news(Heard.of(Ledger(), gauge), running, gauge) is None


def test_a_new_band_is_heard_with_the_point() -> None:
    before = Heard.of(Ledger(), _gauge(8_000, Band.MODERATE))
    heard = news(before, Ledger(), _gauge(9_200, Band.TIGHT))
    assert heard == News("Band now tight: 9.2K used, compaction point 12K")
    without = news(before, Ledger(), _gauge(9_200, Band.UNKNOWN, threshold=None))
    assert without == News("Band now unknown: 9.2K used")


def test_a_log_that_starts_over_is_heard_as_such_not_as_a_band() -> None:
    folded = _ledger(_compaction(200, 13_100, 9_100))
    before = Heard.of(folded, _gauge(9_100, Band.MODERATE), last_seq=267)
    empty = _gauge(0, Band.UNKNOWN, threshold=None)
    assert news(before, Ledger(), empty, 2, replayed=True) == News(
        "The demo starts its recording over: this session plays again from the start."
    )
    assert news(before, Ledger(), empty, 2) == News(
        "The log started over: this session is read again from its first event."
    )
    assert news(before, folded, _gauge(9_100, Band.MODERATE), 267) is None  # not moved
    # The log as it grows again: its band is heard from the first reading on.
    restarted = Heard.of(Ledger(), empty, last_seq=2)
    heard = news(restarted, Ledger(), _gauge(5_742, Band.AMPLE), 16)
    assert heard == News("Band now ample: 5.7K used, compaction point 12K")
