"""What the export says of a session (dshweb.otlp.figures): the GenAI conventions' names
and values, when a compaction's span is settled, ids that are the same whoever sends
them, and a table of every name."""

from __future__ import annotations

from dataclasses import replace

from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.cost import REGISTRY_RATES, CompactionCost
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.otlp import names
from dshweb.otlp.figures import compaction_spans, session_readings, settled, span_id, trace_id
from tests.conftest import FIXTURE_HOMES


def test_the_provider_is_a_well_known_value_where_one_applies() -> None:
    assert [
        names.provider_name(p)
        for p in ("deepseek-official", "deepseek", "openai", "anthropic_vertex", "acme-ai", "")
    ] == ["deepseek", "deepseek", "openai", "anthropic", "acme-ai", "unknown"]


def _compaction(kind: str, status: str, *, rewrite: bool = False) -> Compaction:
    found = Compaction(kind=kind, seq=1, time=1)  # type: ignore[arg-type]
    if status != "open":
        found = replace(found, end_seq=2, end_time=2)
    if status == "failed":
        found = replace(found, error="summary is not smaller")
    if rewrite:
        found = replace(found, cost=CompactionCost(rewrite=("m", "p", False, 0, 0)))
    return found


def test_a_summary_settles_as_it_ends_a_prune_pass_once_something_follows() -> None:
    def kinds(*compactions: Compaction) -> list[int]:
        return settled(compactions)

    automatic, manual = _compaction("automatic", "done"), _compaction("manual", "done")
    assert kinds(automatic, manual) == [0, 1]  # no request after the Compact: sent all the same
    assert kinds(_compaction("overflow", "failed"), _compaction("automatic", "open")) == [0]
    prune = _compaction("prune", "done")
    assert kinds(prune) == []  # another prune may still join it
    assert kinds(_compaction("prune", "done", rewrite=True)) == [0]  # the next request came
    assert kinds(prune, _compaction("automatic", "open")) == [0]


def test_the_ids_are_the_same_whoever_sends_them() -> None:
    assert trace_id("local", "s-1") == trace_id("local", "s-1")
    assert len({trace_id("local", "s-1"), trace_id("laptop", "s-1"), trace_id("local", "s-2")}) == 3
    assert 0 < trace_id("local", "s-1") < 1 << 128 and 0 < span_id("local", "s-1", 7) < 1 << 64
    assert span_id("local", "s-1", 7) != span_id("local", "s-1", 8)
    assert trace_id("local", "s-\udce9") != trace_id("local", "s-\ufffd")  # a lone surrogate


def test_every_name_sent_is_in_the_table() -> None:
    """Each reading's and span's attributes are the ones :mod:`dshweb.otlp.names` lists
    (docs/opentelemetry.md lists the same: tests/otlp/test_docs.py)."""
    index = HomeIndex(FIXTURE_HOMES / "fold-failures")
    index.refresh()
    shot = index.snapshot(next(iter(index.trackers)))
    readings = session_readings(
        shot, context_gauge(shot), home="local", book=REGISTRY_RATES, at_ms=shot.last_time or 0
    )
    assert {r.metric for r in readings.readings} == set(names.METRICS) - {names.COST}
    for reading in readings.readings:
        assert [k for k, _ in reading.attributes] == list(names.METRICS[reading.metric].attributes)
    spans = compaction_spans(shot, home="local", book=REGISTRY_RATES)
    sent = {key for span in spans for key, _ in span.attributes}
    assert sent <= set(names.SPAN_ATTRIBUTES) and len(sent) >= 15
