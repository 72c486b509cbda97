"""The requests' sizes by model (dshweb.core.fold.request_sizes): over every fixture log,
``tokenUsage`` split by route and bucketed; and a sample that replaces its step's last
one moves out of its bucket, as it leaves the totals."""

from __future__ import annotations

from pathlib import Path

from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.request_sizes import TOKEN_BOUNDS, bucket_of
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import LogFile
from tests.conftest import FIXTURE_HOMES
from tests.support.logbuilder import event, frame, header

HOMES = ("cost-switch", "model-switch", "fold-failures", "cost-pro", "web-driven", "subagent-loop")
"""Two models in one session, a refused request retried, a session driven through dsh
web, sub-agents (the fixtures' fake provider writes no cache: the hand-made log below
does)."""


def test_the_sizes_are_token_usage_by_route() -> None:
    for name in HOMES:
        index = HomeIndex(FIXTURE_HOMES / name)
        index.refresh()
        _check(index)


def _check(index: HomeIndex) -> None:
    for folder in index.trackers:
        shot = index.snapshot(folder)
        usage = shot.token_usage
        counts = dict(shot.cost.counts)
        assert {r.route for r in shot.requests} == set(counts), shot.session_id
        for sizes in shot.requests:
            assert sizes.input.count == sizes.output.count == counts[sizes.route]
            assert sum(sizes.input.buckets) == sum(sizes.output.buckets) == sizes.input.count
            assert len(sizes.input.buckets) == len(TOKEN_BOUNDS) + 1
            # cached tokens are input too: the request's whole prompt
            route = [b for slot, b in shot.cost.requests if (slot[0], slot[1]) == sizes.route]
            assert sizes.input.total == sum(b[0] + b[2] + b[3] for b in route)
            assert (sizes.cache_read, sizes.cache_write) == (
                sum(b[2] for b in route),
                sum(b[3] for b in route),
            )
        inputs = sum(r.input.total for r in shot.requests)
        assert (
            inputs
            == usage["uncachedInputTokens"] + usage["cacheReadTokens"] + usage["cacheWriteTokens"]
        )
        assert sum(r.output.total for r in shot.requests) == usage["outputTokens"]


def test_the_buckets_are_otlps_explicit_bounds() -> None:
    assert [bucket_of(v) for v in (0, 1, 2, 4, 5, 67108864, 67108865)] == [0, 0, 1, 1, 2, 13, 14]


def _answer(seq: int, step: int, uncached: int, output: int, model: str = "m") -> dict[str, object]:
    return event(
        seq,
        "assistant/message",
        turn=1,
        step=step,
        message={"role": "assistant", "content": [], "source": {"provider": "p", "model": model}},
        usage={
            "inputTokens": uncached,
            "outputTokens": output,
            "cacheReadTokens": 2 * uncached,
            "cacheWriteTokens": 1,
        },
    )


def test_a_replacing_sample_leaves_its_bucket(tmp_path: Path) -> None:
    path = tmp_path / "session.v4.jsonl.zstd"
    path.write_bytes(frame(header(), _answer(0, 1, 3, 2), _answer(1, 2, 1000, 20)))
    tracker = SessionTracker(LogFile(path, 4, compressed=True))
    tracker.refresh()
    (sizes,) = tracker.requests.result()
    # input: uncached, cache reads and writes together (3 + 6 + 1, 1000 + 2000 + 1)
    assert (sizes.input.count, sizes.input.total) == (2, 10 + 3001)
    assert sizes.input.buckets[bucket_of(3001)] == 1 and sizes.input.buckets[bucket_of(10)] == 1
    assert (sizes.cache_read, sizes.cache_write) == (2006, 2)
    with path.open("ab") as log:  # step 2 again (a retry): it replaces the last sample
        log.write(frame(_answer(2, 2, 700, 30, model="n")))
    tracker.refresh()
    first, second = tracker.requests.result()
    assert (first.route, first.input.count, first.input.total) == (("m", "p"), 1, 10)
    assert first.input.buckets[bucket_of(3001)] == 0 and first.output.total == 2
    assert (first.cache_read, first.cache_write) == (6, 1)
    assert (second.route, second.input.total, second.output.total) == (("n", "p"), 2101, 30)
    assert tracker.meter.token_usage_view()["uncachedInputTokens"] == 703
