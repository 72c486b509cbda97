"""A collector's writer (dshweb.collect.collector.SessionWriter) and what web workers read
back (dshweb.collect.collected), in one process on the test database."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from dshweb.collect.collected import collected_home, collected_home_names, sealing_key
from dshweb.collect.collector import SessionWriter
from dshweb.collect.lease import LeaseLost, lease_release, lease_take
from dshweb.collect.models import CollectedSession, CollectorLease
from dshweb.live.hub import HomeChange, HomeView, Hub
from tests.conftest import FIXTURE_HOMES

pytestmark = [pytest.mark.django_db(transaction=True)]


def _sessions(view: HomeView) -> dict[str, object]:
    return {sid: (dataclasses.asdict(v.snapshot), v.gauge) for sid, v in view.sessions.items()}


def _two_homes(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "subagent-parent", home)
    shutil.copytree(
        FIXTURE_HOMES / "auto-compact" / "sessions",
        home / "sessions",
        dirs_exist_ok=True,
    )
    return home


def test_the_rows_rebuild_the_hubs_view_and_follow_removals(tmp_path: Path) -> None:
    home = _two_homes(tmp_path)
    lease = lease_take(name="h", path=str(home), heartbeat_every=60.0)
    writer = SessionWriter(lease, sealing_key())
    written: list[HomeChange] = []
    writer.subscribe(written.append)
    hub = Hub(home, "sdk", name="h")
    hub.subscribe(writer)
    hub.cold_start()
    assert writer.flush() == len(hub.view().sessions) >= 3
    assert writer.flush() == 0  # nothing changed: no write
    collected = collected_home("h")
    assert collected is not None and collected.online and collected.unreadable == 0
    assert _sessions(collected.view) == _sessions(hub.view())
    assert collected.view.version == 1 and collected.view.home == home
    assert collected.view.tree == hub.view().tree  # the list's order and nesting too
    assert collected_home_names() == ["h"]
    assert written[0].changed == frozenset(hub.view().sessions)

    gone = min(hub.index.folders)
    shutil.rmtree(gone)
    hub.sync()
    writer.flush()
    collected = collected_home("h")
    assert collected is not None
    assert _sessions(collected.view) == _sessions(hub.view())
    assert collected.view.version == 2
    assert written[-1].removed and not written[-1].changed


def test_a_restart_sweeps_sessions_that_went_while_no_collector_ran(tmp_path: Path) -> None:
    home = _two_homes(tmp_path)
    lease = lease_take(name="h", path=str(home), heartbeat_every=60.0)
    writer = SessionWriter(lease, sealing_key())
    first = Hub(home, "sdk", name="h")
    first.subscribe(writer)
    first.cold_start()
    writer.flush()
    lease_release(lease)
    shutil.rmtree(min(first.index.folders))

    lease = lease_take(name="h", path=str(home), heartbeat_every=60.0)
    writer = SessionWriter(lease, sealing_key())
    second = Hub(home, "sdk", name="h")
    second.subscribe(writer)
    second.cold_start()
    writer.flush()
    assert set(CollectedSession.objects.values_list("session_id", flat=True)) == set(
        second.view().sessions
    )


def test_a_writer_that_lost_its_lease_writes_nothing(tmp_path: Path) -> None:
    home = _two_homes(tmp_path)
    lease = lease_take(name="h", path=str(home), heartbeat_every=1.0)
    writer = SessionWriter(lease, sealing_key())
    hub = Hub(home, "sdk", name="h")
    hub.subscribe(writer)
    hub.cold_start()
    CollectorLease.objects.update(heartbeat_at=timezone.now() - timedelta(seconds=10))
    lease_take(name="h", path=str(home), heartbeat_every=1.0)  # another collector now
    with pytest.raises(LeaseLost):
        writer.flush()
    assert not CollectedSession.objects.exists()


def test_a_home_whose_collector_stopped_is_offline_since_its_last_heartbeat(
    tmp_path: Path,
) -> None:
    lease = lease_take(name="h", path=str(tmp_path), heartbeat_every=1.0)
    assert collected_home("nobody") is None
    collected = collected_home("h")
    assert collected is not None and collected.online
    lease_release(lease)
    collected = collected_home("h")
    assert collected is not None and not collected.online
    assert collected.last_seen == CollectorLease.objects.get().released_at
    assert collected.view.sessions == {}


@pytest.mark.asyncio
async def test_committed_writes_are_announced_to_groups_no_socket_here_follows(
    tmp_path: Path,
) -> None:
    import asyncio
    import contextlib

    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer

    from dshweb.live.protocol import (
        SESSION_CHANGED,
        SESSIONS_CHANGED,
        SESSIONS_GROUP,
        session_group,
    )
    from dshweb.live.publisher import Publisher

    home = _two_homes(tmp_path)
    layer = get_channel_layer()
    assert layer is not None
    lease = await sync_to_async(lease_take)(name="h", path=str(home), heartbeat_every=60.0)
    writer = SessionWriter(lease, sealing_key())
    hub = Hub(home, "sdk", name="h")
    hub.subscribe(writer)
    await sync_to_async(hub.cold_start)()
    some = sorted(hub.view().sessions)[0]
    listener = await layer.new_channel()
    await layer.group_add(SESSIONS_GROUP, listener)
    await layer.group_add(session_group("h", some), listener)
    # A collector that wrote before (versions go on across restarts).
    await sync_to_async(CollectorLease.objects.filter(name="h").update)(version=6)
    task = asyncio.create_task(Publisher(writer, only_watched=False).run())
    try:
        await asyncio.sleep(0)  # the publisher subscribes
        await sync_to_async(writer.flush)()
        messages = [await asyncio.wait_for(layer.receive(listener), 5) for _ in range(2)]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    # The version is the lease's, the rows' (not the hub's own): a worker reads them at it.
    version = await sync_to_async(lambda: CollectorLease.objects.get(name="h").version)()
    assert version == 7 != hub.view().version
    changed = {"type": SESSION_CHANGED, "home": "h", "session_id": some, "gone": False}
    assert changed | {"version": version} in messages
    ids = [["h", session_id] for session_id in sorted(hub.view().sessions)]
    assert {"type": SESSIONS_CHANGED, "ids": ids, "versions": {"h": version}} in messages


class _CountingLayer:
    """The in-process channel layer, counting group sends in flight (each waits a little,
    as a send to Redis does), failing those to ``failing``."""

    def __init__(self, failing: str = "") -> None:
        from channels.layers import InMemoryChannelLayer

        self.layer = InMemoryChannelLayer()
        self.failing = failing
        self.in_flight = self.most = 0

    async def group_send(self, group: str, message: dict[str, object]) -> None:
        import asyncio

        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            if group == self.failing:
                raise ConnectionError(f"{group}: refused")
            await self.layer.group_send(group, message)
        finally:
            self.in_flight -= 1


@pytest.mark.asyncio
async def test_announcements_go_out_together_and_a_failure_stops_none_of_the_rest() -> None:
    from dshweb.live.publisher import SENDS_AT_ONCE, _send_all

    counting = _CountingLayer(failing="g-3")
    listener = await counting.layer.new_channel()
    groups = [f"g-{i}" for i in range(40)]
    for group in groups:
        await counting.layer.group_add(group, listener)
    messages = [(group, {"type": "x", "group": group}) for group in groups]
    failures = await _send_all(counting, messages)
    assert counting.most == SENDS_AT_ONCE  # at once, and no more than that
    assert list(failures) == [3] and str(failures[3]) == "g-3: refused"
    received = {(await counting.layer.receive(listener))["group"] for _ in range(39)}
    assert received == set(groups) - {"g-3"}


def test_the_write_loop_writes_a_change_when_it_comes_not_at_its_next_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    from dshweb.collect import collector

    monkeypatch.setattr(collector, "TICK", 6.0)
    home = _two_homes(tmp_path)
    lease = lease_take(name="h", path=str(home), heartbeat_every=60.0)
    writer = SessionWriter(lease, sealing_key())
    written = threading.Event()
    writer.subscribe(lambda change: written.set())
    stop = threading.Event()
    loop = threading.Thread(target=collector._follow, args=(lease, writer, stop))
    loop.start()
    try:
        time.sleep(0.3)  # the loop waits for its first change
        hub = Hub(home, "sdk", name="h")
        hub.subscribe(writer)
        hub.cold_start()
        changed = time.monotonic()
        # Polling every TICK, it would be written about 5.7 s from now.
        assert written.wait(3.0), "the change was not written within 3 s"
        assert time.monotonic() - changed < 3.0 and writer.writes == 1
        assert CollectedSession.objects.count() == len(hub.view().sessions) >= 3
    finally:
        stop.set()
        loop.join(10)
    assert not loop.is_alive()
