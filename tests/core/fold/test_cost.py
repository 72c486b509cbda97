"""What a session and each fold cost (dshweb.core.fold.cost), against the registry itself.

For every fixture log made by the real runtime, the log is read again here, raw, and each
request, summary and fold is priced one by one with ``dsh_llm_cost.estimate_cost`` at its
own time; the sums must equal what dshweb folded by model and billing quarter hour. The
``cost-*`` homes ran on ``deepseek-v4-pro`` (priced) with a prefix-caching fake model, and
``cost-switch`` began on ``deepseek-flash`` (not in the registry: unknown, never $0).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import dsh_llm_cost
import pytest
from dsh_llm_cost import pricing as registry

from dshweb.core.fold.billing import clock
from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.cost import (
    DEFAULT_WINDOWS,
    CompactionCost,
    CostCollector,
    RateBook,
    parse_aliases,
    parse_windows,
)
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.ledger import LedgerCollector
from dshweb.core.fold.meter import SessionMeter, Usage
from dshweb.core.fold.session import SessionSnapshot
from tests.conftest import FIXTURE_HOMES
from tests.fixtures.dshrun import SessionLog, session_logs
from tests.support.logbuilder import typed

HOMES = sorted(p for p in FIXTURE_HOMES.iterdir() if (p / "sessions").is_dir())
COSTED_HOMES = ("cost-pro", "cost-switch")


def close(value: float | None) -> object:
    """Equal but for the order floating-point sums were added in."""
    return pytest.approx(value, rel=1e-12, abs=1e-15)


@dataclass(frozen=True)
class Request:
    seq: int
    time: int
    model: str
    provider: str
    usage: dict[str, int]


def _usage(data: dict[str, Any]) -> dict[str, int] | None:
    usage = data.get("usage")
    if isinstance(usage, dict) and usage.get("inputTokens") is not None:
        return usage
    for record in reversed(data.get("stream") or []):
        chunk = record.get("chunk") if isinstance(record, dict) else None
        if isinstance(chunk, dict) and chunk.get("type") == "usage":
            found = chunk.get("usage")
            return found if isinstance(found, dict) else None
    return None


def requests_of(log: SessionLog) -> tuple[list[Request], set[int]]:
    """The requests ``tokenUsage`` counts (a sample of the same step replaces the last,
    DSH_FACTS §6), and the seqs of the samples that replaced one."""
    counted: list[Request] = []
    replacing: set[int] = set()
    last: tuple[Any, Any] | None = None
    model = provider = ""
    for event in log.events:
        kind, data = event["type"], event.get("data") or {}
        if kind == "request/header":
            config = (data.get("header") or {}).get("config") or {}
            model = config.get("model") or model
            provider = config.get("provider") or provider
        elif kind == "llm/retry-started" and last == (data.get("turn"), data.get("step")):
            last = None
        elif kind in ("assistant/message", "assistant/attempt"):
            usage = _usage(data)
            if usage is None:
                continue
            source = (data.get("message") or {}).get("source") or {}
            request = Request(
                event["seq"],
                event["time"],
                source.get("model") or model,
                source.get("provider") or provider,
                usage,
            )
            if last == (data.get("turn"), data.get("step")):
                counted[-1] = request
                replacing.add(event["seq"])
            else:
                counted.append(request)
            last = (data.get("turn"), data.get("step"))
    return counted, replacing


def estimate(model: str, provider: str, time: int, **tokens: int) -> float | None:
    found = dsh_llm_cost.estimate_cost(
        model,
        provider,
        input_tokens=tokens.get("input", 0),
        output_tokens=tokens.get("output", 0),
        cache_read_tokens=tokens.get("cache_read", 0),
        cache_write_tokens=tokens.get("cache_write", 0),
        at=datetime.fromtimestamp(time / 1000, tz=UTC),
    )
    return None if found is None else found.total_usd


def bill(usage: dict[str, int], model: str, provider: str, time: int) -> float | None:
    return estimate(
        model,
        provider,
        time,
        input=usage.get("inputTokens") or 0,
        output=usage.get("outputTokens") or 0,
        cache_read=usage.get("cacheReadTokens") or 0,
        cache_write=usage.get("cacheWriteTokens") or 0,
    )


def snapshots(home: Path) -> dict[str, SessionSnapshot]:
    index = HomeIndex(home)
    index.refresh()
    return {snap.session_id: snap for snap in index.snapshots()}


def registry_total(log: SessionLog) -> tuple[float | None, bool]:
    """Every request and summary of ``log``, each priced by the registry at its time."""
    total: float | None = None
    unrated = False
    requests, _ = requests_of(log)
    costed = [(r.usage, r.model, r.provider, r.time) for r in requests]
    for event in log.of_type("compaction/summary"):
        data = event["data"]
        if data.get("usage") and data.get("model"):
            costed.append((data["usage"], data["model"], data.get("provider") or "", event["time"]))
    for usage, model, provider, time in costed:
        if not any(usage.get(k) for k in ("inputTokens", "outputTokens", "cacheReadTokens")):
            continue
        dollars = bill(usage, model, provider, time)
        if dollars is None:
            unrated = True
        else:
            total = (total or 0.0) + dollars
    return total, unrated


@pytest.mark.parametrize("home", HOMES, ids=[h.name for h in HOMES])
def test_a_sessions_cost_is_the_registry_price_of_its_requests_and_summaries(home: Path) -> None:
    book = RateBook()
    logs = session_logs(home)
    for session_id, snap in snapshots(home).items():
        expected, unrated = registry_total(logs[session_id])
        total, unknown = book.total(snap.cost)
        assert unknown == unrated, session_id
        if expected is None:
            assert total is None, f"{session_id}: an unpriced model shown as ${total}"
        else:
            assert total == close(expected), session_id
        requests, replacing = requests_of(logs[session_id])
        rows = book.by_route(snap.cost)
        assert sum(r.requests for r in rows) == len(requests) + len(replacing) - len(replacing)
        assert [sum(r.tokens[i] for r in rows) for i in range(4)] == [
            snap.token_usage[k]
            for k in ("uncachedInputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
        ]


def _compaction_of(compactions: tuple[Compaction, ...], compaction_id: str) -> Compaction:
    (compaction,) = (f for f in compactions if f.compaction_id == compaction_id)
    return compaction


@pytest.mark.parametrize("name", COSTED_HOMES)
def test_each_compaction_costs_what_the_registry_says_of_its_summary_rewrite_and_requests_after(
    name: str,
) -> None:
    """Per fold: the summariser's usage; the next request sending the checkpoint and the
    tail uncached (DeepSeek bills a miss as input: it has no cache-write price); the
    requests until the next fold, each not sending what the fold freed (as cache reads)."""
    home = FIXTURE_HOMES / name
    book = RateBook()
    (log,) = session_logs(home).values()
    (snap,) = snapshots(home).values()
    requests, replacing = requests_of(log)
    requests = [r for r in requests if r.seq not in replacing]
    compactions = [f for f in snap.ledger.compactions if f.status == "done"]
    assert len(compactions) >= 10  # 9 compactions and the prune passes
    checked = {"summary": 0, "rewrite": 0, "requests after": 0}
    spent, saved = [], []  # every priced part, request by request, for the totals
    for number, compaction in enumerate(compactions):
        costed = book.compaction(compaction.cost, compaction.summary_usage, compaction.saved)
        assert compaction.end_seq is not None
        until = compactions[number + 1].end_seq if number + 1 < len(compactions) else None
        after = [
            r for r in requests if r.seq > compaction.end_seq and (until is None or r.seq < until)
        ]
        on_pro = all(r.model == "deepseek-v4-pro" for r in after[:1])
        if compaction.kind != "prune":
            summary = _summary_event(log, compaction.compaction_id)
            expected = bill(
                summary["usage"], summary["model"], summary["provider"], compaction.time or 0
            )
            spent.append(expected)
            if expected is not None:
                assert costed.summary == close(expected)
                checked["summary"] += 1
        if not after:
            assert compaction.cost.rewrite is None and costed.rewrite is None
            continue
        assert costed.requests_after == len(after)
        first, freed = after[0], compaction.saved or 0
        spent.append(
            estimate(first.model, first.provider, first.time, input=compaction.cost.rewritten)
        )
        saved += [estimate(r.model, r.provider, r.time, cache_read=freed) for r in after]
        if not on_pro or costed.unrated:
            assert costed.unrated and costed.cost is None
            continue
        # The rewritten prefix is the checkpoint and the tail after it: at least the
        # checkpoint, less than the whole surface, and near what the provider billed the
        # next request as uncached (it also carries what the step added).
        assert (compaction.checkpoint_tokens or 0) <= compaction.cost.rewritten
        assert compaction.cost.rewritten <= first.usage["inputTokens"] * 1.1
        rewrite = estimate(first.model, first.provider, first.time, input=compaction.cost.rewritten)
        assert costed.rewrite == close(rewrite)
        checked["rewrite"] += 1
        expected_saved = sum(
            estimate(r.model, r.provider, r.time, cache_read=freed) or 0.0 for r in after
        )
        assert costed.not_resent == close(expected_saved)
        checked["requests after"] += len(after)
    # All folds, from the ledger's running sums: each priced request's part, added up (a
    # fold on flash whose later requests ran on pro saved on those).
    total = book.compactions(snap.cost, snap.ledger.spend)
    assert total.unrated == (None in spent or None in saved) == (name == "cost-switch")
    assert total.cost == close(sum(p for p in spent if p is not None))
    assert total.saved == close(sum(p for p in saved if p is not None))
    assert checked["summary"] >= (6 if name == "cost-pro" else 4), checked
    assert checked["rewrite"] >= (10 if name == "cost-pro" else 6), checked


def _summary_event(log: SessionLog, compaction_id: str | None) -> dict[str, Any]:
    (event,) = (
        e for e in log.of_type("compaction/summary") if e["data"]["compactionId"] == compaction_id
    )
    return {**event["data"], "provider": event["data"].get("provider") or ""}


def test_peak_windows_set_here_price_as_the_registry_with_those_windows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``cost-pro`` ran on a weekday evening (UTC), off-peak by the registry's windows: a
    window over those minutes bills it at the peak rate, twice the off-peak one."""
    home = FIXTURE_HOMES / "cost-pro"
    (log,) = session_logs(home).values()
    (snap,) = snapshots(home).values()
    start = datetime.fromtimestamp(log.events[0]["time"] / 1000, tz=UTC)
    end = datetime.fromtimestamp(log.events[-1]["time"] / 1000, tz=UTC)
    assert start.weekday() < 5 and clock(log.events[0]["time"])[0] is False
    first = start.hour * 4 + start.minute // 15
    last = end.hour * 4 + end.minute // 15 + 1
    assert not any(a <= first < b for a, b in DEFAULT_WINDOWS), "recorded at a peak hour"
    text = f"{first // 4:02d}:{first % 4 * 15:02d}-{last // 4:02d}:{last % 4 * 15:02d}"
    windows = parse_windows(text)
    off_peak = RateBook().total(snap.cost)[0]
    peak = RateBook(windows=windows).total(snap.cost)[0]
    assert off_peak is not None and peak == close(2 * off_peak)
    monkeypatch.setattr(registry, "PEAK_WINDOWS", tuple((a / 4, b / 4) for a, b in windows))
    assert peak == close(registry_total(log)[0])


def test_a_model_priced_as_another_is_priced_by_that_entry_and_says_so() -> None:
    home = FIXTURE_HOMES / "auto-compact"
    (log,) = session_logs(home).values()
    (snap,) = snapshots(home).values()
    assert RateBook().total(snap.cost) == (None, True)
    book = RateBook(aliases=parse_aliases("deepseek-flash=deepseek-v4-flash"))
    total, unknown = book.total(snap.cost)
    requests, _ = requests_of(log)
    summaries = [(e["data"]["usage"], e["time"]) for e in log.of_type("compaction/summary")]
    expected = sum(bill(r.usage, "deepseek-v4-flash", "", r.time) or 0.0 for r in requests)
    expected += sum(bill(u, "deepseek-v4-flash", "", t) or 0.0 for u, t in summaries if u)
    assert not unknown and total == close(expected)
    (row,) = book.by_route(snap.cost)
    assert row.rates.alias == "deepseek-v4-flash" and row.rates.matched == "deepseek-v4-flash"
    assert row.rates.effective_date == registry.REGISTRY["deepseek-v4-flash"].effective_date


def test_the_billing_clock_follows_the_registry_weekend_rule() -> None:
    def ms(text: str) -> int:
        return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)

    def day(text: str) -> int:
        return date.fromisoformat(text).toordinal()

    assert clock(ms("2026-08-22T02:30:00")) == (False, 10, day("2026-08-22"))  # a Saturday
    assert clock(ms("2026-08-29T02:30:00")) == (True, 10, day("2026-08-29"))  # after the rule
    assert clock(ms("2026-12-04T09:59:59")) == (False, 39, day("2026-12-04"))
    assert clock(ms("2026-12-04T23:59:59")) == (False, 95, day("2026-12-04"))
    assert clock(None) == (False, -1, -1)
    book = RateBook()
    entry = registry.REGISTRY["deepseek-v4-pro"]
    for text in (
        "2026-08-22T02:30:00",
        "2026-08-29T02:30:00",
        "2026-12-04T09:59:59",
        "2026-12-04T10:00:00",
        "2026-12-04T00:59:00",
    ):
        at = datetime.fromisoformat(text).replace(tzinfo=UTC)
        weekend, quarter, _ = clock(ms(text))
        assert book.factor(entry, weekend, quarter) == registry.price_factor(entry, at), text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1-4", "is not HH:MM-HH:MM"),
        ("01:10-04:00", "quarter hours"),
        ("04:00-01:00", "ends before it starts"),
        ("23:00-24:15", "quarter hours"),
    ],
)
def test_peak_windows_that_are_not_quarter_hours_of_a_day_are_refused(
    text: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_windows(text)


def test_windows_and_aliases_read_back() -> None:
    assert parse_windows("01:00-04:00, 06:00-10:00") == DEFAULT_WINDOWS
    assert parse_windows("00:00-24:00") == ((0, 96),)
    assert parse_aliases(" deepseek-flash = deepseek-v4-flash ") == (
        ("deepseek-flash", "deepseek-v4-flash"),
    )
    with pytest.raises(ValueError, match="not in the dsh-llm-cost registry"):
        parse_aliases("deepseek-flash=deepseek-v9")


def test_a_sample_that_replaces_its_steps_last_is_taken_off_where_that_one_was_counted() -> None:
    """DSH_FACTS §6: a sample of the same turn and step replaces the last in the totals,
    and ``llm/retry-started`` forgets it; the dollars follow, even when the replaced sample
    was counted in another quarter hour (or under another model)."""

    def header(seq: int, model: str) -> dict[str, object]:
        config = {"provider": "deepseek-official", "model": model}
        return {
            "type": "request/header",
            "seq": seq,
            "time": 0,
            "data": {"header": {"config": config}},
        }

    def attempt(seq: int, minute: int, step: int, inp: int) -> dict[str, object]:
        usage = {"inputTokens": inp, "outputTokens": 10, "cacheReadTokens": 1000}
        record = {"type": "chunk", "chunk": {"type": "usage", "usage": usage}}
        time = int(datetime(2026, 12, 3, 2, minute, tzinfo=UTC).timestamp() * 1000)  # a peak
        data = {"turn": 1, "step": step, "stream": [record]}
        return {"type": "assistant/attempt", "seq": seq, "time": time, "data": data}

    meter, collector = SessionMeter(), CostCollector()
    events = [
        header(0, "deepseek-v4-flash"),
        attempt(1, 10, 1, 100),
        header(2, "deepseek-v4-pro"),
        attempt(3, 20, 1, 120),  # replaces the flash sample, in the next quarter hour
        {"type": "llm/retry-started", "seq": 4, "time": 0, "data": {"turn": 1, "step": 1}},
        attempt(5, 50, 1, 130),  # after a retry: added
    ]
    for raw in events:
        event = typed(raw)
        meter.fold(event)
        collector.observe(event, meter)
    cost = collector.result()
    book = RateBook()
    rows = {r.rates.route[0]: r for r in book.by_route(cost)}
    assert list(rows) == ["deepseek-v4-pro"]  # the flash sample was replaced: no request left
    assert rows["deepseek-v4-pro"].tokens == (250, 20, 2000, 0)
    assert rows["deepseek-v4-pro"].requests == 2
    at = [datetime(2026, 12, 3, 2, m, tzinfo=UTC) for m in (20, 50)]
    expected = sum(
        dsh_llm_cost.estimate_cost(
            "deepseek-v4-pro", input_tokens=i, output_tokens=10, cache_read_tokens=1000, at=t
        ).total_usd
        for i, t in zip((120, 130), at, strict=True)
    )
    assert book.total(cost) == (close(expected), False)


@pytest.mark.parametrize(
    ("model", "provider", "bucket"),
    [
        ("deepseek-v4-pro", "deepseek-official", "input"),  # no cache-write price: a miss
        ("claude-sonnet-5", "anthropic", "cache_write"),  # a cache write has its own price
        ("claude-sonnet-5-20260901", "anthropic", "cache_write"),  # by the registry's ladder
        ("qwen3", "ollama", None),  # free
    ],
)
def test_a_rewritten_prefix_is_billed_as_the_models_price_bills_it(
    model: str, provider: str, bucket: str | None
) -> None:
    at = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)  # a Wednesday, at a peak hour
    slot = (model, provider, *clock(int(at.timestamp() * 1000)))
    cost = CompactionCost(rewritten=5_000, rewrite=slot, not_resent=((slot, 3),))
    costed = RateBook().compaction(cost, None, 4_000)
    assert not costed.unrated and costed.requests_after == 3
    if bucket is None:
        assert (costed.rewrite, costed.not_resent, costed.cost) == (0.0, 0.0, 0.0)
        return
    tokens = {"input_tokens": 0, "output_tokens": 0, f"{bucket}_tokens": 5_000}
    expected = dsh_llm_cost.estimate_cost(model, provider, **tokens, at=at)
    read = dsh_llm_cost.estimate_cost(
        model, provider, input_tokens=0, output_tokens=0, cache_read_tokens=12_000, at=at
    )
    assert expected is not None and read is not None
    assert costed.rewrite == close(expected.total_usd) and expected.total_usd > 0
    assert costed.not_resent == close(read.total_usd)
    assert costed.net == close(read.total_usd - expected.total_usd)


def test_a_compaction_on_a_model_without_a_price_is_unknown_not_free() -> None:
    slot = ("deepseek-flash", "deepseek-official", False, 40, 739_000)
    cost = CompactionCost(summary=slot, rewritten=5_000, rewrite=slot, not_resent=((slot, 2),))
    costed = RateBook().compaction(cost, Usage(100, 10, 900, 0), 4_000)
    assert costed.unrated
    assert (costed.summary, costed.rewrite, costed.not_resent, costed.cost, costed.net) == (
        None,
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize("time", [2**53, -(2**53), 10**15, None])
def test_a_request_at_a_time_no_calendar_holds_is_billed_at_the_base_rate(time: int | None) -> None:
    """A hostile log's time (any safe integer) neither stops the fold nor loses the
    request: it is billed as ``estimate_cost`` bills a request without a time."""
    usage = {"inputTokens": 1000, "outputTokens": 100, "cacheReadTokens": 5000}
    raw = [
        {
            "type": "request/header",
            "seq": 0,
            "time": time,
            "data": {
                "header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-pro"}}
            },
        },
        {
            "type": "assistant/message",
            "seq": 1,
            "time": time,
            "data": {"turn": 1, "step": 1, "usage": usage},
        },
    ]
    meter, collector, ledger = SessionMeter(), CostCollector(), LedgerCollector()
    for item in raw:
        event = typed({k: v for k, v in item.items() if v is not None})
        meter.fold(event)
        ledger.observe(event, meter)
        collector.observe(event, meter)
    ((slot, _),) = collector.result().requests
    assert slot[2:] == (False, -1, -1)
    expected = dsh_llm_cost.estimate_cost(
        "deepseek-v4-pro", input_tokens=1000, output_tokens=100, cache_read_tokens=5000
    )
    assert expected is not None
    assert RateBook().total(collector.result()) == (close(expected.total_usd), False)
