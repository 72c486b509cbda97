"""A session's context after every step, read afresh from its log: the step export.

The ledger keeps at most a few hundred pressure points per session (it thins them as the
session grows); an export wants every step. :func:`fold_steps` folds the log from its
first byte with a meter of its own and gives one row (:data:`STEP_COLUMNS`) at each
``step/end``: the pressure (the last usage sample), the projected tokens, the window, the
compaction point in force then and the band held against it from step to step (the one
rule the pages go by: :class:`~dshweb.core.fold.point.StepBand`, the profile's point or
the one the engine's decisions so far allow), the percent DSH's ring shows and the usage
buckets summed so far. The settings are the session's own (``table``: its agent preset's
when its log names one). Rows go to ``on_row`` as they are made: nothing but the
meter is kept, so a log of any length exports in the memory of one fold. The log is
read :data:`STEP_SLICE` at a time and ``keep_going`` asked between slices, so a fold
nobody waits for any more (the client went away) ends soon, even on a log that decodes
to gigabytes without a single step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dshweb.core.errors import LogError
from dshweb.core.fold.gauge import context_percent
from dshweb.core.fold.meter import BUCKET_KEYS, SessionMeter
from dshweb.core.fold.point import Decisions, StepBand, used_tokens
from dshweb.core.fold.session import Activity
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import Budget, LogTail
from dshweb.core.log.times import iso_utc
from dshweb.core.log.wire import AnyEvent, StepEnd
from dshweb.core.profile.effective import DEFAULT_RULE, SettingsTable
from dshweb.core.said import say

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
    *BUCKET_KEYS,
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
    table: SettingsTable | None,
    on_row: Callable[[StepRow], object],
    keep_going: Callable[[], bool] = lambda: True,
) -> LogError | None:
    """Fold ``log`` from its start, giving each step's row to ``on_row``, until its end
    or until ``keep_going()`` says no; the reader's error, if the log stops being
    readable (the rows before it were given). ``table``: the home's settings (``None``:
    no compaction point)."""
    meter, decisions, bands, activity = SessionMeter(), Decisions(), StepBand(), Activity()
    header: dict[str, Any] = {}
    count = 0

    def on_event(event: AnyEvent) -> None:
        nonlocal count
        decisions.observe(event, meter)
        meter.fold(event)
        activity.fold(event)
        if type(event) is not StepEnd:
            return
        count += 1
        engine, rule = None, DEFAULT_RULE
        if table is not None:
            settings = table.of(activity.running_preset(header))[1]
            engine, rule = settings.engine, settings.rule
        threshold, band = bands.step_end(meter, decisions, engine, rule)
        used = used_tokens(meter)
        time = event.time if isinstance(event.time, int) else None
        on_row(
            (
                count,
                event.seq,
                iso_utc(time),
                time,
                meter.pressure_tokens,
                meter.projected_tokens,
                meter.context_window,
                threshold,
                context_percent(used, meter.context_window),
                band.value,
                *meter.totals,
            )
        )

    def on_reset() -> None:
        raise _Replaced

    tail = LogTail(log.path, compressed=log.compressed)
    try:
        while keep_going():
            batch = tail.read(on_event, on_reset, STEP_SLICE, on_header=header.update)
            if batch.error is not None or not batch.more:
                return batch.error
    except _Replaced:
        return LogError(say("log-replaced"), offset=tail.offset)
    return None
