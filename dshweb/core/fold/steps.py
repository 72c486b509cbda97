"""A session's context after every step, read afresh from its log: the step export.

The ledger keeps at most a few hundred pressure points per session (it thins them as the
session grows); an export wants every step. :func:`fold_steps` folds the log from its
first byte with a meter of its own and gives one row (:data:`STEP_COLUMNS`) at each
``step/end``: the pressure (the last usage sample), the projected tokens, the window, the
compaction point the engine's settings give for that window and reserve, the percent
DSH's ring shows, the band (held with the plugin's hysteresis from step to step) and the
usage buckets summed so far. Rows go to ``on_row`` as they are made: nothing but the
meter is kept, so a log of any length exports in the memory of one fold.
"""

from __future__ import annotations

from collections.abc import Callable

from dshweb.core.errors import LogError
from dshweb.core.fold.compaction import compaction_point
from dshweb.core.fold.gauge import Band, context_band, context_percent
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import LogTail
from dshweb.core.log.times import iso_utc
from dshweb.core.log.wire import AnyEvent, StepEnd
from dshweb.core.profile.effective import DEFAULT_RULE, BandRule, EngineConfig

STEP_COLUMNS = (
    "step",
    "seq",
    "time",
    "time_ms",
    "pressure",
    "projected",
    "window",
    "threshold",
    "percent",
    "band",
    "uncached_input",
    "output",
    "cache_read",
    "cache_write",
)
"""``step`` counts the session's steps from 1; ``time`` is ISO 8601 UTC, ``time_ms``
DSH's epoch milliseconds; the usage buckets are the sums over every request so far."""

StepRow = tuple[int | str | None, ...]


def fold_steps(
    log: LogFile,
    *,
    engine: EngineConfig | None,
    rule: BandRule = DEFAULT_RULE,
    on_row: Callable[[StepRow], object],
) -> LogError | None:
    """Fold ``log`` from its start, giving each step's row to ``on_row``; the reader's
    error, if the log stops being readable (the rows before it were given)."""
    meter = SessionMeter()
    band: Band | None = None
    count = 0

    def on_event(event: AnyEvent) -> None:
        nonlocal band, count
        meter.fold(event)
        if type(event) is not StepEnd:
            return
        count += 1
        window = meter.context_window
        threshold = None
        if engine is not None and window is not None:
            point = compaction_point(
                context_window=window, reserved=meter.reserved_tokens, engine=engine
            )
            threshold = point.threshold_tokens
        projected, pressure = meter.projected_tokens, meter.pressure_tokens
        used = projected if projected is not None else pressure
        band = context_band(used, threshold, band, rule)
        time = event.time if isinstance(event.time, int) else None
        on_row(
            (
                count,
                event.seq,
                iso_utc(time),
                time,
                pressure,
                projected,
                window,
                threshold,
                context_percent(used, window),
                band.value,
                *meter.totals,
            )
        )

    batch = LogTail(log.path, compressed=log.compressed).read(on_event, lambda: None)
    return batch.error
