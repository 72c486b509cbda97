"""One session followed live: its log tail, its fold, and the snapshot made from them.

:class:`SessionTracker` owns the per-session state (the tail's offset and the meter);
``refresh()`` folds only what was appended since the last call. :func:`take_snapshot`
turns that state into a :class:`SessionSnapshot`, a plain value for views and the CLI.
"""

from __future__ import annotations

import heapq
import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dshweb.core.fold.compaction import CompactionPoint, catalogue_point, measured_tokens
from dshweb.core.fold.cost import (
    REGISTRY_RATES,
    CostCollector,
    RateBook,
    SessionCost,
    cost_json,
)
from dshweb.core.fold.forecast import NO_FORECASTS, Forecast, Forecasts, as_of
from dshweb.core.fold.gauge import Band
from dshweb.core.fold.known import CutKnown, Known
from dshweb.core.fold.ledger import Ledger, LedgerCollector
from dshweb.core.fold.meter import SessionMeter, SurfaceNode
from dshweb.core.fold.pace import PaceCollector
from dshweb.core.fold.point import (
    InferredPoint,
    StepBand,
    basis_of,
    effective_threshold,
    point_known,
    point_of,
    threshold_source,
)
from dshweb.core.fold.preview import (
    AutomaticPreview,
    CompactionPreview,
    automatic_outcomes,
    manual_preview,
)
from dshweb.core.fold.pricing import DEFAULT_CUT, PruneCut, freed
from dshweb.core.fold.request_sizes import RequestSizesCollector, RouteSizes
from dshweb.core.fold.revealed import cut_known, retain_known
from dshweb.core.fold.told import Told, ToldCollector
from dshweb.core.log.home import LogFile
from dshweb.core.log.jsjson import printable
from dshweb.core.log.reader import UNBOUNDED, Budget, LogTail
from dshweb.core.log.wire import (
    AnyEvent,
    CompactionStart,
    CompactionSummary,
    Other,
    PresetSelected,
    SessionTitle,
    StepEnd,
    ToolCall,
    TurnStart,
)
from dshweb.core.profile.catalogue import DEFAULT_CATALOGUE, ModelCatalogue
from dshweb.core.profile.effective import DEFAULT_RULE, BandRule, EngineConfig, SettingsSource
from dshweb.core.said import say

Settings = tuple[EngineConfig | None, BandRule]

CACHE_STEPS = 64
"""Step boundaries whose cache readings a snapshot carries (the cache-hit alert's reach)."""


@dataclass(slots=True)
class Activity:
    """Counters a person wants beside the projections (the folds are counted by the
    ledger: :class:`~dshweb.core.fold.ledger.Ledger`)."""

    title: str | None = None
    first_time: int | None = None
    last_time: int | None = None
    turns: int = 0
    preset: str | None = None
    """The agent preset the session last selected (``agent-preset/selected``); the
    header's ``agentPreset`` before any."""

    def count(self, event: AnyEvent) -> None:
        """Fold an event of a type it does not read (:data:`QUIET`): its time."""
        time = event.time
        if time is not None:
            if self.first_time is None:
                self.first_time = time
            self.last_time = time

    def fold(self, event: AnyEvent) -> None:
        self.count(event)
        cls = type(event)
        if cls is TurnStart:
            self.turns += 1
        elif cls is SessionTitle:
            data = event.data  # type: ignore[union-attr]
            if data is not None and isinstance(data.title, str):
                self.title = data.title
        elif cls is PresetSelected:
            data = event.data  # type: ignore[union-attr]
            if data is not None and isinstance(data.agent_preset, str):
                self.preset = data.agent_preset

    def running_preset(self, header: dict[str, Any]) -> str | None:
        """The agent preset the session runs: the last one it selected, else its
        header's (the one it was created with)."""
        if self.preset is not None:
            return self.preset
        value = header.get("agentPreset")
        return value if isinstance(value, str) else None


_versions = itertools.count(1)

QUIET: frozenset[type] = frozenset({Other, ToolCall})
"""The events no collector reads but to count them: the meter, the ledger and the activity
take their seq and time (:meth:`SessionMeter.count`, :meth:`LedgerCollector.count`,
:meth:`Activity.count`), and the other collectors would pass them over. Two in five
events of a working session are of these types (plugins' own, tool calls). A collector
that comes to read one of them must take it out of here; a test folds every fixture log
with this set empty and compares."""


@dataclass(slots=True)
class SessionTracker:
    log: LogFile
    stop_after_seq: int | None = None
    tail: LogTail = field(init=False)
    meter: SessionMeter = field(init=False)
    activity: Activity = field(init=False)
    pace: PaceCollector = field(init=False)
    ledger: LedgerCollector = field(init=False)
    told: ToldCollector = field(init=False)
    cost: CostCollector = field(init=False)
    requests: RequestSizesCollector = field(init=False)
    step_band: StepBand = field(init=False)
    header: dict[str, Any] = field(init=False)
    error: str | None = field(init=False, default=None)
    version: int = field(init=False, default=0)
    """Changes with every change to what a snapshot would show; unique across trackers,
    so a tracker that replaced another (a new generation) never repeats its number."""
    unfinished: bool = field(init=False, default=False)
    """The last refresh spent its budget: the log holds more than is folded."""
    settings_of: Callable[[SessionTracker], Settings] | None = field(default=None, repr=False)
    """The engine and band settings this session runs under (its home's index knows
    them by its profile and preset), asked at each step boundary for its band."""
    before_event: Callable[[AnyEvent], object] | None = field(default=None, repr=False)
    """Called with each event before it is folded (the state then is the one the event
    before it left): a caller that wants the session as it was between two events (the
    OpenTelemetry backfill, :mod:`dshweb.otlp.backfill`)."""

    def __post_init__(self) -> None:
        self.tail = LogTail(self.log.path, self.log.compressed)
        self._start_over()

    def _take_header(self, header: dict[str, Any]) -> None:
        self.header = header  # before the events after it: their settings may follow it

    def _start_over(self) -> None:
        self.meter = SessionMeter()
        self.activity = Activity()
        self.pace = PaceCollector()
        self.ledger = LedgerCollector()
        self.told = ToldCollector()
        self.cost = CostCollector()
        self.requests = RequestSizesCollector()
        self.step_band = StepBand()
        self.header = {}

    def refresh(self, budget: Budget = UNBOUNDED) -> bool:
        """Fold what was appended since the last call, at most ``budget`` of it (see
        ``unfinished``); True when anything changed."""
        pending = self.tail.pending
        batch = self.tail.read(self._fold, self._start_over, budget, on_header=self._take_header)
        self.unfinished = batch.more
        if batch.header is not None:
            self.header = batch.header
        current = batch.error or self.tail.error
        error = str(current) if current is not None else None
        changed = bool(
            batch.reset
            or batch.header
            or batch.events
            or error != self.error
            or pending != self.tail.pending
        )
        self.error = error
        if changed:
            self.touch()
        return changed

    def touch(self) -> None:
        """Mark the snapshot changed (a new version) for a reason outside the log."""
        self.version = next(_versions)

    def _fold(self, event: AnyEvent) -> None:
        stop = self.stop_after_seq
        if stop is not None and (event.seq if event.seq is not None else -1) > stop:
            return
        if self.before_event is not None:
            self.before_event(event)
        kind = type(event)
        if kind in QUIET:
            self.meter.count(event)
            self.ledger.count(event)
            self.activity.count(event)
            return
        self.pace.observe(event, self.meter)  # before the fold: the reading as the step began
        self.told.observe(event, self.meter)  # before the fold: the reading the line was given
        self.meter.fold(event)
        retain = self._retain() if kind is CompactionStart else None
        self.ledger.observe(event, self.meter, retain)  # after the fold: the reading it left
        sample = self.meter.sample
        if sample is not None:
            self.cost.sampled(sample)
            self.requests.observe(self.meter)
        elif kind is CompactionSummary:
            self.cost.summarised(event)  # type: ignore[arg-type]
        self.activity.fold(event)
        if kind is StepEnd:
            engine, rule = self.settings_of(self) if self.settings_of else (None, DEFAULT_RULE)
            self.step_band.step_end(self.meter, self.pace.decisions, engine, rule)

    def _retain(self) -> int | None:
        """The ``retainTokens`` the engine runs with now, when it is known exactly (the
        ledger keeps what a preview keeping it said beside what the engine did)."""
        engine = self.settings_of(self)[0] if self.settings_of else None
        return settings_known(self, engine, None)[1].exact

    @property
    def session_id(self) -> str:
        """The header's ``id``; the folder's name when the header names none a page can
        link to (not a string, empty, or with a line break, which a URL path stops at)."""
        value = self.header.get("id")
        if isinstance(value, str) and value and "\n" not in value:
            return value
        return self.log.session_dir.name

    @property
    def preset(self) -> str | None:
        """The agent preset the session runs (:meth:`Activity.running_preset`)."""
        return self.activity.running_preset(self.header)


@dataclass(frozen=True, slots=True)
class SessionSnapshot:
    """Everything shown about one session at one moment; plain data."""

    session_id: str
    path: str
    format_version: int
    cwd: str | None
    created_at: int | None
    parent_session: str | None
    origin: str | None
    live: bool
    title: str | None
    model: str | None
    last_seq: int
    events: int
    first_time: int | None
    last_time: int | None
    turns: int
    token_usage: dict[str, int]
    context_pressure: dict[str, int]
    context_breakdown: dict[str, int]
    point: CompactionPoint | None
    measured_tokens: int
    largest_nodes: tuple[SurfaceNode, ...]
    errors: tuple[str, ...]
    pace_samples: tuple[int, ...] = ()
    """Per-step growth of ``measured_tokens`` since the last re-base (dshweb.core.fold.pace)."""
    pace_growth: tuple[int, ...] = ()
    """Per-step growth of ``measured_tokens`` over the last steps, across folds."""
    step_times: tuple[int, ...] = ()
    """When each of the last steps began (epoch ms)."""
    step_cache: tuple[tuple[int, int], ...] = ()
    """At each of the last :data:`CACHE_STEPS` step boundaries, the cache-read and prompt
    tokens of all the requests before it (dshweb.core.fold.pace)."""
    inferred: InferredPoint = field(default_factory=InferredPoint)
    """The compaction point's range by the engine's own decisions in the log."""
    forecasts: Forecasts = field(default_factory=lambda: NO_FORECASTS)
    """The next pass of the engine's check (a prune or a summary) and the next summary
    from that pace (:class:`~dshweb.core.fold.forecast.Forecasts`: made without a clock
    when first read, then kept; :meth:`forecast` and :meth:`summary_forecast` say when it
    is idle)."""
    ledger: Ledger = field(default_factory=Ledger)
    """Every fold and the pressure timeline (dshweb.core.fold.ledger); the fold counts."""
    told: Told = field(default_factory=Told)
    """What dsh-context-truth last told the model about its context (dshweb.core.fold.told)."""
    source: SettingsSource | None = None
    """Which profile and agent preset gave the compaction settings (``point``)."""
    rule: BandRule = DEFAULT_RULE
    """The band edges of the profile the session runs under (dsh-context-truth's)."""
    step_band: Band | None = None
    """The band at the last step boundary (:class:`~dshweb.core.fold.point.StepBand`):
    the one a reading now is held against."""
    past: bool = False
    """Folded only up to a chosen event (``--at-seq``): a view of the session as it was
    then, whose clock is that event's time, not the wall clock."""
    automatic: AutomaticPreview = field(default_factory=AutomaticPreview)
    """What the next automatic fold would take away, were it to come now: every outcome
    the settings known so far allow, and those settings with their sources."""
    manual_preview: CompactionPreview = field(default_factory=lambda: CompactionPreview("manual"))
    """What a Compact now would take away."""
    cost: SessionCost = field(default_factory=SessionCost)
    """The tokens of its requests and summaries by model and billing time (costed by a
    :class:`~dshweb.core.fold.cost.RateBook`)."""
    requests: tuple[RouteSizes, ...] = ()
    """Each model's requests, their input and output bucketed by size
    (:mod:`dshweb.core.fold.request_sizes`)."""
    held_by: str | None = None
    """Who holds the session's lock when the process that folds it knows them: ``"dsh-web"``
    for the ``dsh web`` that process runs for Compact (it keeps every session it compacted
    attached until it stops); None for anyone else, or when the session is not live."""
    tail_bytes: int = 0
    """Bytes at the end of the log that are not a whole event yet (the reader's
    ``pending``): DSH is writing them, or a writer that stopped tore them. Every figure
    is as of the last whole event before them (``last_seq``)."""

    @property
    def automatic_preview(self) -> CompactionPreview | None:
        """The next automatic fold, when the settings known leave one outcome."""
        return self.automatic.one

    @property
    def used_tokens(self) -> int | None:
        """What DSH's own ring shows: ``projectedTokens ?? pressureTokens``."""
        pressure = self.context_pressure
        return pressure.get("projectedTokens", pressure.get("pressureTokens"))

    @property
    def threshold_source(self) -> str | None:
        """``profile`` while the profile's compaction point agrees with what the engine did
        (or nothing bounds it), ``inferred`` when the engine's decisions say otherwise or
        the profile gives none; ``None`` when neither knows."""
        return threshold_source(self.point, self.inferred)

    @property
    def threshold(self) -> int | None:
        """The compaction point the band and the forecast go by (see ``threshold_source``)."""
        return effective_threshold(self.point, self.inferred)

    def works_in(self, folder: str) -> bool:
        """Whether DSH ran this session in ``folder`` or a folder inside it."""
        cwd, root = self.cwd, folder.rstrip("/") or "/"
        if cwd is None:
            return False
        return cwd == root or cwd.startswith(root if root.endswith("/") else root + "/")

    @property
    def pace_forecast(self) -> Forecast:
        """The next pass, without a clock (:meth:`forecast` says when it is idle)."""
        return self.forecasts.next_pass

    @property
    def summary_pace_forecast(self) -> Forecast:
        """The next summary, without a clock (:meth:`summary_forecast`)."""
        return self.forecasts.next_summary

    def forecast(self, now_ms: int | None = None) -> Forecast:
        """Steps and minutes until the next pass of the engine's check: a prune or a
        summary (``now_ms``: epoch ms now, to tell an idle session; a ``past`` view goes
        by the time of its last event)."""
        return as_of(self.pace_forecast, self.step_times, self.clock(now_ms))

    def summary_forecast(self, now_ms: int | None = None) -> Forecast:
        """Steps and minutes until the next automatic summary (as :meth:`forecast`)."""
        return as_of(self.summary_pace_forecast, self.step_times, self.clock(now_ms))

    def clock(self, now_ms: int | None) -> int | None:
        """What "now" is for this snapshot: ``now_ms``, or for a ``past`` view the time
        of the last event it folded."""
        return self.last_time if self.past and self.last_time is not None else now_ms

    def as_json(self, now_ms: int | None = None, book: RateBook = REGISTRY_RATES) -> dict[str, Any]:
        """The snapshot in the CLI's JSON shape (the host's field names, and dshweb's
        ``forecast`` and ``summaryForecast``, as of ``now_ms``; ``cost`` costed by
        ``book``)."""
        compaction: dict[str, Any] = (
            self.point.as_dict()
            if self.point is not None
            else dict.fromkeys(
                ("contextWindow", "reservedTokens", "thresholdTokens", "retainTokens")
            )
        )
        compaction["measuredTokens"] = self.measured_tokens
        compaction["inferred"] = self.inferred.as_json()
        compaction["source"] = self.threshold_source
        compaction["settingsFrom"] = None if self.source is None else self.source.as_json()
        automatic = self.automatic_preview
        compaction["preview"] = {
            "automatic": automatic.as_json() if automatic is not None else None,
            "automaticOutcomes": self.automatic.as_json(),
            "manual": self.manual_preview.as_json(),
        }
        return {
            "sessionId": self.session_id,
            "title": self.title,
            "cwd": self.cwd,
            "path": self.path,
            "formatVersion": self.format_version,
            "createdAt": self.created_at,
            "parentSession": self.parent_session,
            "origin": self.origin,
            "live": self.live,
            "heldBy": self.held_by,
            "model": self.model,
            "lastSeq": self.last_seq,
            "events": self.events,
            "lastEventTime": self.last_time,
            "turns": self.turns,
            "compactions": self.ledger.summaries,
            "prunes": self.ledger.prunes,
            "tokenUsage": self.token_usage,
            "contextPressure": self.context_pressure,
            "contextBreakdown": self.context_breakdown,
            "compaction": compaction,
            "forecast": self.forecast(now_ms).as_json(),
            "summaryForecast": self.summary_forecast(now_ms).as_json(),
            "told": self.told.as_json(),
            "cost": cost_json(self.cost, self.ledger.spend, book),
            "errors": list(self.errors),
            "tailBytes": self.tail_bytes,
        }


def _str(value: Any) -> str | None:
    return printable(value) if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _relative(path: Path, home: Path) -> str:
    """``path`` relative to ``home`` when it lies under it (by its text: a snapshot is
    taken at every change, and ``Path.relative_to`` costs more than the rest of it)."""
    text, root = str(path), str(home)
    if text.startswith(root) and text[len(root) : len(root) + 1] == os.sep:
        return text[len(root) + 1 :]
    try:
        return str(path.relative_to(home))
    except ValueError:
        return text


def _printable_node(node: SurfaceNode) -> SurfaceNode:
    preview = printable(node.preview)
    return node if preview is node.preview else replace(node, preview=preview)


def take_snapshot(
    tracker: SessionTracker,
    *,
    home: Path,
    live: bool,
    engine: EngineConfig | None,
    source: SettingsSource | None = None,
    rule: BandRule = DEFAULT_RULE,
    largest: int = 8,
    extra_errors: tuple[str, ...] = (),
    pruner: PruneCut | None = DEFAULT_CUT,
    prior: Sequence[int] = (),
    models: ModelCatalogue = DEFAULT_CATALOGUE,
    held_by: str | None = None,
) -> SessionSnapshot:
    """``prior``: the per-step growth of the home's other sessions on the session's model
    (its forecasts' pace before it has steps of its own); ``held_by``: who holds its lock
    (:attr:`SessionSnapshot.held_by`)."""
    meter, activity, header = tracker.meter, tracker.activity, tracker.header
    measured = measured_tokens(meter)
    growth, times = tuple(tracker.pace.growth), tuple(tracker.pace.times)
    inferred = tracker.pace.decisions.at(basis_of(meter))
    point = point_of(meter, engine)
    threshold = effective_threshold(point, inferred)
    base = tracker.pace.checks.base(measured)
    path = _relative(tracker.log.path, home)
    errors = ([tracker.error] if tracker.error else []) + meter.problems + list(extra_errors)
    if meter.more_problems:
        errors.append(say("more-problems", count=f"{meter.more_problems:,}"))
    nodes = heapq.nlargest(largest, meter.nodes, key=lambda n: n.tokens)
    ledger = tracker.ledger.result(meter, threshold=threshold)
    known_point, known_retain, known_cut = settings_known(tracker, engine, pruner, models)
    # The summary forecast's pace: what a prune of every result on the surface frees now
    # (each step's net growth is the forecasts' to work out, when one is read).
    cut = known_cut.likeliest()
    freeable_now = sum(freed(n.shape, cut) for n in meter.prunable.values() if n.shape)
    return SessionSnapshot(
        session_id=printable(tracker.session_id),
        path=printable(path),
        format_version=_int(header.get("version")) or tracker.log.version,
        cwd=_str(header.get("cwd")),
        created_at=_int(header.get("createdAt")),
        parent_session=_str(header.get("parentSession")),
        origin=_str(header.get("origin")),
        live=live,
        held_by=held_by if live else None,
        title=_str(activity.title),
        model=_str(meter.model),
        last_seq=meter.last_seq,
        events=meter.events,
        first_time=activity.first_time,
        last_time=activity.last_time,
        turns=activity.turns,
        token_usage=meter.token_usage_view(),
        context_pressure=meter.context_pressure_view(),
        context_breakdown=meter.context_breakdown_view(),
        point=point,
        measured_tokens=measured,
        largest_nodes=tuple(_printable_node(n) for n in nodes),
        errors=tuple(printable(e) for e in errors),
        pace_samples=tracker.pace.samples,
        pace_growth=growth,
        step_times=times,
        step_cache=tuple(tracker.pace.cache[-CACHE_STEPS:]),
        inferred=inferred,
        forecasts=Forecasts(
            measured=base,
            freeable_now=freeable_now,
            point=known_point,
            growth=growth,
            added=tuple(tracker.pace.checks.added),
            cut=cut,
            times=times,
            prior=tuple(prior),
        ),
        ledger=ledger,
        told=tracker.told.result(),
        source=source,
        rule=rule,
        step_band=tracker.step_band.band,
        past=tracker.stop_after_seq is not None,
        automatic=_printable_outcomes(
            automatic_outcomes(
                meter, measured, known_point, known_retain, known_cut, ledger.compactions
            )
        ),
        manual_preview=_printable_preview(manual_preview(meter, measured, ledger.compactions)),
        cost=tracker.cost.result(),
        requests=tracker.requests.result(),
        tail_bytes=0 if tracker.stop_after_seq is not None else tracker.tail.pending,
    )


def settings_known(
    tracker: SessionTracker,
    engine: EngineConfig | None,
    cut: PruneCut | None,
    models: ModelCatalogue = DEFAULT_CATALOGUE,
) -> tuple[Known, Known, CutKnown]:
    """The point, the retain and the pruner's cut the session's engine goes by now: the
    profile's (``engine``, ``cut``) where the engine's acts in the log allow them, else
    what those acts reveal (:mod:`dshweb.core.fold.revealed`). Before the log records a
    window, the point of the profile's catalogue (``models``) for the header's model."""
    meter, pace = tracker.meter, tracker.pace
    profile = point_of(meter, engine)
    basis = basis_of(meter)
    point = point_known(profile, pace.decisions.at(basis), meter)
    if meter.context_window is None:
        profile = catalogue_point(engine, models, meter.model, meter.reserved_tokens or None)
        if profile is not None and profile.threshold_tokens is not None:
            point = Known.exactly(profile.threshold_tokens, "catalogue")
    retain = retain_known(
        profile.retain_tokens if profile is not None else None,
        point,
        pace.revealed.retain,
        basis,
    )
    return point, retain, cut_known(cut, pace.revealed.cut, point)


def _printable_outcomes(said: AutomaticPreview) -> AutomaticPreview:
    return replace(said, outcomes=tuple(map(_printable_preview, said.outcomes)))


def _printable_preview(preview: CompactionPreview) -> CompactionPreview:
    if preview.first is None or preview.last is None:
        return preview
    return replace(
        preview, first=_printable_node(preview.first), last=_printable_node(preview.last)
    )
