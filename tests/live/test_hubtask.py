"""Stopping a job that follows the hub (dshweb.live.hubtask): a cancel that Python 3.11's
``asyncio.wait_for`` swallows is asked again, so a stop always ends."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from dshweb.live.hubtask import _cancelled, next_within


async def _a_job_like_the_watcher(changes: asyncio.Queue[int]) -> None:
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changes.get(), timeout=10)


@pytest.mark.asyncio
async def test_a_cancel_that_lands_as_a_change_comes_is_asked_again() -> None:
    changes: asyncio.Queue[int] = asyncio.Queue()
    job = asyncio.create_task(_a_job_like_the_watcher(changes))
    await asyncio.sleep(0)
    changes.put_nowait(1)
    await asyncio.sleep(0)  # the change has come: the get is done, wait_for not resumed
    job.cancel()
    done, _ = await asyncio.wait({job}, timeout=0.3)
    assert not done  # the cancel was swallowed: the job went on (what hung a teardown)
    await asyncio.wait_for(_cancelled(job), timeout=5)
    assert job.cancelled()


@pytest.mark.asyncio
async def test_a_loop_on_next_within_ends_at_one_cancel() -> None:
    # A job's loop: wake on an item or a short timeout, again and again. One cancel, landing
    # wherever in the wait it lands, ends it (the runner of a test cancels only once).
    queue: asyncio.Queue[int] = asyncio.Queue()
    seen: list[int] = []

    async def job() -> None:
        while True:
            seen.extend(await next_within(queue, 0.001))

    for trial in range(100):
        task = asyncio.create_task(job())
        queue.put_nowait(trial)
        await asyncio.sleep(0.001 * (trial % 7))
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=1.0)
        assert done == {task}, f"trial {trial}: the loop went on after its cancel"
    assert seen == sorted(set(seen)) and len(seen) >= 50  # each item once, in order
