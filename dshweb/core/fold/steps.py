"""A session's context after every step, read afresh from its log: the step export.

The ledger keeps at most a few hundred pressure points per session (it thins them as the
session grows); an export wants every step. :func:`fold_steps` folds the log from its
first byte with a meter of its own and gives one row (:data:`STEP_COLUMNS`) at each
``step/end``: the pressure (the last usage sample), the projected tokens, the window, the
compaction point the engine's settings give for that window and reserve, the percent
DSH's ring shows, the band (held with the plugin's hysteresis from step to step) and the
usage buckets summed so far. Rows go to ``on_row`` as they are made: nothing but the
meter is kept, so a log of any length exports in the memory of one fold. The log is
read :data:`STEP_SLICE` at a time and ``keep_going`` asked between slices, so a fold
nobody waits for any more (the client went away) ends soon, even on a log that decodes
to gigabytes without a single step.
"""

from __future__ import annotations

from collections.abc import Callable

from dshweb.core.errors import LogError
from dshweb.core.fold.compaction import compaction_point
from dshweb.core.fold.gauge import Band, context_band, context_percent
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import Budget, LogTail
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


STEP_SLICE = Budget(events=5_000, bytes=4 << 20)
"""What is folded between two looks at ``keep_going`` (a few milliseconds)."""


class _Replaced(Exception):
    """The log was replaced while it was read: its rows so far are of another file."""


def fold_steps(
    log: LogFile,
    *,
    engine: EngineConfig | None,
    rule: BandRule = DEFAULT_RULE,
    on_row: Callable[[StepRow], object],
    keep_going: Callable[[], bool] = lambda: True,
) -> LogError | None:
    """Fold ``log`` from its start, giving each step's row to ``on_row``, until its end
    or until ``keep_going()`` says no; the reader's error, if the log stops being
    readable (the rows before it were given)."""
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

    def on_reset() -> None:
        raise _Replaced

    tail = LogTail(log.path, compressed=log.compressed)
    try:
        while keep_going():
            batch = tail.read(on_event, on_reset, STEP_SLICE)
            if batch.error is not None or not batch.more:
                return batch.error
    except _Replaced:
        return LogError("the log was replaced while it was read", offset=tail.offset)
    return None
