"""A session's whole ledger and timeline: older ledger pages, and the series as files.

``ledger.html?before=<fold number>`` is one page of the ledger, newest first: the
fragment for ``#ledger-older`` to an htmx request, a page of its own otherwise (so the
session page's "Older folds" link works without JavaScript). ``timeline.csv|json`` and
``ledger.csv|json`` are downloads (``Content-Disposition: attachment``) of every point
and every fold the ledger holds, the rows of :mod:`dshweb.sessions.display.ledger_rows`.

Downloads are streamed a batch of rows at a time from an *asynchronous* iterator:
dshweb runs under ASGI (Daphne), where Django would first collect a synchronous
iterator into one list. Login is required as for every page (``LoginRequiredMiddleware``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from itertools import islice
from typing import Literal

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from dshweb.config import get_config
from dshweb.core.fold.session import SessionSnapshot
from dshweb.sessions.display.ledger_rows import (
    COMPACTION_COLUMNS,
    REFUSED_COLUMNS,
    TIMELINE_COLUMNS,
    Value,
    compaction_rows,
    refused_row,
    timeline_rows,
)
from dshweb.sessions.fragments import ledger_view
from dshweb.sessions.refusals import HtmxHttpRequest, session_or_refusal

BATCH = 500
"""Rows per chunk sent."""
CSV_TYPE = "text/csv; charset=utf-8"
JSON_TYPE = "application/json"
_UNSAFE_NAME = re.compile(r"[^\w.-]+")
_FORMULA_START = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""What a spreadsheet runs a cell starting with (the full-width forms too), once it has
trimmed the cell's leading white space."""


def _snapshot(request: HttpRequest, home: str, session_id: str) -> SessionSnapshot | HttpResponse:
    """The session now, or the page saying why there is none (503 or 404)."""
    found = session_or_refusal(request, home, session_id)
    return found if isinstance(found, HttpResponse) else found[1].snapshot


@require_GET
def session_ledger(request: HtmxHttpRequest, home: str, session_id: str) -> HttpResponse:
    """The ledger's folds numbered below ``?before=`` (the newest page without it)."""
    raw = request.GET.get("before", "")
    try:
        before = int(raw) if raw else None
    except ValueError:
        reason = _("?before= takes a fold number (1, 2, …), not %(given)s.") % {
            "given": repr(raw[:40])
        }
        return render(request, "400.html", {"reason": reason}, status=400)
    found = _snapshot(request, home, session_id)
    if isinstance(found, HttpResponse):
        return found
    ledger = found.ledger
    shown = ledger_view(ledger, before)
    context = {
        "home_name": home,
        "session": found,
        "ledger": ledger,
        "page": shown.page,
        "lv": shown,
        "title_is_data": True,  # the session's own title: <title translate="no">
    }
    if request.htmx and not request.htmx.history_restore_request:
        return render(request, "dashboard/_ledger_page.html", context)
    return render(request, "dashboard/session_ledger.html", context)


# -- downloads --------------------------------------------------------------------------


def file_name(session_id: str, name: str) -> str:
    return f"{_UNSAFE_NAME.sub('_', session_id)[:80]}-{name}"


def download(chunks: AsyncIterator[str], content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


Row = tuple[Value, ...]
Batches = AsyncIterator[list[Row]]


async def in_batches(rows: Iterator[Row]) -> Batches:
    while batch := list(islice(rows, BATCH)):
        yield batch


def _cell(value: Value) -> Value:
    # A spreadsheet runs a cell that starts like a formula; texts from the log are data.
    if isinstance(value, str) and (
        value[:1].isspace() or value.lstrip().startswith(_FORMULA_START)
    ):
        return "'" + value
    return value


async def csv_chunks(columns: Sequence[str], batches: Batches) -> AsyncIterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(columns)
    yield buffer.getvalue()
    async for batch in batches:
        buffer.seek(0)
        buffer.truncate()
        writer.writerows([_cell(v) for v in row] for row in batch)
        yield buffer.getvalue()


def _json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def json_array(columns: Sequence[str], batches: Batches) -> AsyncIterator[str]:
    """``[{column: value, …}, …]``, one object per row."""
    yield "["
    separator = ""
    async for batch in batches:
        yield separator + ",".join(
            _json_text(dict(zip(columns, row, strict=True))) for row in batch
        )
        separator = ","
    yield "]"


async def json_object(
    head: dict[str, object],
    arrays: Sequence[tuple[str, AsyncIterator[str]]],
    tail: Callable[[], dict[str, object]] = dict,
) -> AsyncIterator[str]:
    """``head``'s members, then each named array, streamed in order, then ``tail()``'s
    members (what is known only once the arrays are sent)."""
    yield _json_text(head)[:-1]  # the object's "}" comes after the arrays
    for name, array in arrays:
        yield f",{_json_text(name)}:"
        async for chunk in array:
            yield chunk
    for name, value in tail().items():
        yield f",{_json_text(name)}:{_json_text(value)}"
    yield "}"


Download = Literal["timeline.csv", "timeline.json", "ledger.csv", "ledger.json"]


def _download_of(
    request: HttpRequest, home: str, session_id: str, name: Download
) -> HttpResponseBase:
    found = _snapshot(request, home, session_id)
    if isinstance(found, HttpResponse):
        return found
    ledger = found.ledger
    head: dict[str, object] = {
        "home": home,
        "session": found.session_id,
        "lastSeq": found.last_seq,
        "threshold": ledger.threshold,
    }
    # Generators: nothing is read before the response is sent.
    points = in_batches(timeline_rows(ledger.points))
    compactions = in_batches(
        compaction_rows(ledger.compactions, get_config().rate_book, first=ledger.first)
    )
    if name == "timeline.csv":
        chunks, content_type = csv_chunks(TIMELINE_COLUMNS, points), CSV_TYPE
    elif name == "ledger.csv":
        chunks, content_type = csv_chunks(COMPACTION_COLUMNS, compactions), CSV_TYPE
    elif name == "timeline.json":
        chunks = json_object(head, [("points", json_array(TIMELINE_COLUMNS, points))])
        content_type = JSON_TYPE
    else:
        refused = in_batches(map(refused_row, ledger.refused))
        chunks = json_object(
            head,
            [
                ("folds", json_array(COMPACTION_COLUMNS, compactions)),
                ("refused", json_array(REFUSED_COLUMNS, refused)),
            ],
        )
        content_type = JSON_TYPE
    return download(chunks, content_type, file_name(session_id, name))


@require_GET
def timeline_csv(request: HttpRequest, home: str, session_id: str) -> HttpResponseBase:
    """Every point of the session's pressure series: seq, time, tokens, role, fold."""
    return _download_of(request, home, session_id, "timeline.csv")


@require_GET
def timeline_json(request: HttpRequest, home: str, session_id: str) -> HttpResponseBase:
    return _download_of(request, home, session_id, "timeline.json")


@require_GET
def ledger_csv(request: HttpRequest, home: str, session_id: str) -> HttpResponseBase:
    """Every fold, oldest first, with the figures the ledger table shows."""
    return _download_of(request, home, session_id, "ledger.csv")


@require_GET
def ledger_json(request: HttpRequest, home: str, session_id: str) -> HttpResponseBase:
    """Every fold and every refused ``/compact``."""
    return _download_of(request, home, session_id, "ledger.json")
