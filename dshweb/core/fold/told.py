"""What the model was told about its context: dsh-context-truth's last occupancy line.

The plugin contributes a section named ``context-truth`` to the runtime context; when the
rendered snapshot changes, the host appends it as a ``user/message`` whose ``source`` is
``{"kind": "runtime-context", "form": "snapshot", "sections": [{"name", "text"}, …]}``
(each snapshot supersedes the ones before it). :class:`ToldCollector` keeps the last such
section, with the measure at that moment and the compactions since. :func:`read_line` takes
the figures (:func:`~dshweb.core.fold.line_tokens.read_line_tokens`) and the band out of
the line's words (English or Chinese, as the plugin renders them); a band the words do not
name (a wording this code does not know) comes from the figures, by the one band rule
(:func:`~dshweb.core.fold.gauge.context_band`, the plugin's default edges).
:func:`told_gap` compares that band with the one the dashboard shows now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from dshweb.core.fold.compaction import measured_tokens
from dshweb.core.fold.gauge import Band, context_band
from dshweb.core.fold.line_tokens import format_line_tokens, read_line_tokens
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.log.wire import AnyEvent, CompactionStart, UserMessage

SECTION = "context-truth"
"""The runtime-context section dsh-context-truth contributes (its ``CONTEXT_NAME``)."""

BANDS = tuple(band.value for band in Band if band is not Band.UNKNOWN)
"""From calmest to most urgent: the plugin's bands, and the dashboard's."""

_SIZE = r"(?:under |不足 )?[\d.]+[KM]?"
_FIGURES = (
    re.compile(
        rf"Context occupancy \(host-measured\): (?P<used>{_SIZE}) / (?P<window>[\d.]+[KM]?) "
        rf"tokens used \((?P<percent>(?:under )?\d+)%\)"
    ),
    re.compile(
        rf"上下文实况（宿主实测）：已用 (?P<used>{_SIZE}) / (?P<window>[\d.]+[KM]?)"
        rf"（(?P<percent>(?:不足 )?\d+)%）"
    ),
)
_POINT = re.compile(r"(?:Automatic compaction fires at |自动压缩阈值 )(?P<point>[\d.]+[KM]?)")
_HEADROOM = re.compile(
    r"(?:(?P<under>Under |距阈值不足 )|About |距阈值还有约 )(?P<headroom>[\d.]+[KM]?) tokens"
)
_NO_READING = ("Context occupancy: no reading yet", "上下文实况：本会话尚未取到用量读数")
_BAND_WORDS = (
    ("ample", ("Context is NOT scarce", "上下文不紧张")),
    ("moderate", ("There is still real headroom", "仍有充足余量")),
    ("tight", ("Headroom is genuinely small", "余量确实不多了")),
    ("critical", ("At or past the automatic compaction point", "已到或越过自动压缩点")),
)


@dataclass(frozen=True, slots=True)
class ToldLine:
    """One occupancy line as the model was given it, and what dshweb measured then."""

    seq: int | None
    time: int | None
    text: str
    band: str
    """``ample`` … ``critical``, or ``unknown`` (the line says there is no reading yet)."""
    band_from: str
    """``words`` (the line names its band) or ``figures`` (worked out from its numbers)."""
    used: int | None
    """Tokens used as the line gives them (a figure under one display step: None)."""
    window: int | None
    point: int | None
    headroom: int | None
    """Tokens of headroom as the line gives them (None: not given, or under a step)."""
    percent: int | None
    measured: int
    """dshweb's measure of the context when the line was given (the plugin's reading)."""
    compactions_since: int = 0
    """Compactions started after the line was given (the model has not been told of them)."""

    @property
    def read_before_a_compaction(self) -> bool:
        """The line's figure is above what was measured as it was given: its reading was
        taken before a compaction that came between (the plugin floors its figure, so a true
        reading is never more than half a thousand above the measure)."""
        return self.used is not None and self.used > self.measured + 500

    def as_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": self.time,
            "text": self.text,
            "band": self.band,
            "bandFrom": self.band_from,
            "usedTokens": self.used,
            "windowTokens": self.window,
            "thresholdTokens": self.point,
            "headroomTokens": self.headroom,
            "percent": self.percent,
            "measuredTokens": self.measured,
            "foldsSince": self.compactions_since,
        }


@dataclass(frozen=True, slots=True)
class Told:
    """What the session's runtime context told the model about its occupancy."""

    line: ToldLine | None = None
    """The last line given (None: none, or the last snapshot carried none)."""
    snapshots: int = 0
    """Runtime-context snapshots in the log, with the line or without."""
    lines: int = 0
    """Snapshots that carried the line."""

    def as_json(self) -> dict[str, Any] | None:
        return None if self.line is None else self.line.as_json()


def read_line(text: str) -> dict[str, Any]:
    """The figures and band of an occupancy line (see :class:`ToldLine`'s fields)."""
    if text.startswith(_NO_READING):
        return dict.fromkeys(("used", "window", "point", "headroom", "percent")) | {
            "band": "unknown",
            "band_from": "words",
        }
    found = next((m for p in _FIGURES if (m := p.search(text)) is not None), None)
    used = window = percent = None
    if found is not None:
        used, window = read_line_tokens(found["used"]), read_line_tokens(found["window"])
        percent = int(found["percent"]) if found["percent"].isdigit() else None
    point_match, headroom_match = _POINT.search(text), _HEADROOM.search(text)
    point = read_line_tokens(point_match["point"]) if point_match else None
    headroom = (
        read_line_tokens(headroom_match["headroom"])
        if headroom_match and not headroom_match["under"]
        else None
    )
    band = next((b for b, words in _BAND_WORDS if any(w in text for w in words)), None)
    figures = {"used": used, "window": window, "point": point, "headroom": headroom}
    if band is not None:
        return figures | {"percent": percent, "band": band, "band_from": "words"}
    return figures | {
        "percent": percent,
        # A figure under one display step (``under 50K``) is read as no tokens at all.
        "band": context_band(used or 0, point or window).value,
        "band_from": "figures",
    }


@dataclass(slots=True)
class ToldCollector:
    """The last occupancy line of a log, folded event by event (before the meter folds
    each: the line's reading is the measure as its request was assembled)."""

    _line: ToldLine | None = None
    _snapshots: int = 0
    _lines: int = 0

    def observe(self, event: AnyEvent, meter: SessionMeter) -> None:
        cls = type(event)
        if cls is CompactionStart:
            line = self._line
            if line is not None:
                self._line = _with_compaction(line)
            return
        if cls is not UserMessage:
            return
        data = event.data  # type: ignore[union-attr]
        source = data.source if data is not None else None
        if not isinstance(source, dict) or source.get("kind") != "runtime-context":
            return
        self._snapshots += 1
        sections = source.get("sections")
        text = next(
            (
                s.get("text")
                for s in sections or ()
                if isinstance(s, dict) and s.get("name") == SECTION
            ),
            None,
        )
        if not isinstance(text, str):
            if source.get("form") == "snapshot":
                self._line = None  # superseded by a snapshot without it
            return
        self._lines += 1
        self._line = ToldLine(
            seq=event.seq,
            time=event.time,
            text=text,
            measured=measured_tokens(meter),
            **read_line(text),
        )

    def result(self) -> Told:
        return Told(self._line, self._snapshots, self._lines)


def _with_compaction(line: ToldLine) -> ToldLine:
    return replace(line, compactions_since=line.compactions_since + 1)


@dataclass(frozen=True, slots=True)
class ToldGap:
    """How far what the model was told is from the band shown now."""

    told: str
    """The band told (``nothing`` when no line was given)."""
    now: str
    bands: int
    """Bands between them (0: they agree)."""
    point: str | None = None
    """``missing`` when the line names no compaction point while the engine has one,
    ``differs`` when the one it names is not the engine's (as the plugin rounds), else
    None."""

    @property
    def disagrees(self) -> bool:
        """The model holds a band that is not the context's now. Told nothing (no
        ``dsh-context-truth`` in the session's profile, the normal case) it holds none:
        nothing stale to warn of."""
        return self.told != "nothing" and self.bands >= 1


def told_gap(told: Told, now: str, threshold: int | None = None) -> ToldGap | None:
    """What the model was told against the band ``now`` and the compaction point the
    dashboard goes by (None when the band now is not known). A line that says there is
    no reading yet tells the model its context is not scarce: it counts as ``ample``; no
    line at all is as far from any band as one band, but holds no band to be stale
    (:attr:`ToldGap.disagrees`)."""
    if now not in BANDS:
        return None
    line = told.line
    if line is None:
        return ToldGap("nothing", now, 1)
    said = "ample" if line.band == "unknown" else line.band
    point = None
    if threshold is not None and line.band != "unknown":
        if line.point is None:
            point = "missing"
        elif format_line_tokens(line.point) != format_line_tokens(threshold):
            point = "differs"
    return ToldGap(line.band, now, abs(BANDS.index(said) - BANDS.index(now)), point)
