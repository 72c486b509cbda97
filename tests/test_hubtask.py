"""Stopping a job that follows the hub (dshweb.live.hubtask): a cancel that Python 3.11's
``asyncio.wait_for`` swallows is asked again, so a stop always ends."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from dshweb.live.hubtask import _cancelled


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
