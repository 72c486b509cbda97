"""The hub: it alone folds; pages and sockets only read; a restart resumes from the
checkpoints in the database and equals a cold fold, field for field.

Real fixture homes (made by the real DSH runtime), copied and cut short, then grown
frame by frame as DSH appends.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.collect.checkpoints import DatabaseCheckpoints
from dshweb.collect.models import FoldCheckpoint
from dshweb.core.fold import spread
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.session import SessionTracker
from dshweb.core.log.home import session_logs
from dshweb.core.log.reader import UNBOUNDED, Budget
from dshweb.live import hub as hub_module
from dshweb.live import service, timing
from dshweb.live.hub import Hub
from tests.conftest import FIXTURE_HOMES
from tests.support.homes import home_of_fixtures
from tests.support.logbuilder import frames_of

pytestmark = [pytest.mark.django_db(transaction=True)]

HOMES = sorted(p for p in FIXTURE_HOMES.iterdir() if (p / "sessions").is_dir())
# Two young sessions (fewer steps than a forecast needs) among sessions on their model
# that have steps enough: the young ones are forecast by the others' pace.
YOUNG_AMONG_OTHERS = [
    "profile-switch",
    "subagent-parent",
    "replay-cycle-b-retain",
    "hidden-sdk-4",
    "cjk-heavy",
    "unrecorded-retain-2",
    "pace-steady",
    "prune-heavy",
]


def _cut_home(source: Path, target: Path, rng: random.Random) -> dict[Path, list[bytes]]:
    """A copy of ``source`` whose logs stop at random frames; the rest of each log."""
    shutil.copytree(source, target)
    rest: dict[Path, list[bytes]] = {}
    for log in session_logs(target):
        if not log.compressed:
            continue
        frames = frames_of(log.path)
        cut = rng.randint(1, len(frames))
        log.path.write_bytes(b"".join(frames[:cut]))
        rest[log.path] = frames[cut:]
    return rest


def _grow(rest: dict[Path, list[bytes]]) -> None:
    for path, frames in rest.items():
        with path.open("ab") as handle:  # the same file, as DSH appends
            handle.write(b"".join(frames))


def _shots(hub: Hub) -> dict[str, Any]:
    view = hub.view()
    assert view.error is None
    return {sid: (dataclasses.asdict(v.snapshot), v.gauge) for sid, v in view.sessions.items()}


def _count_folds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every log a tracker reads from now on."""
    read: list[Path] = []
    original = SessionTracker.refresh

    def counting(self: SessionTracker, budget: Budget = UNBOUNDED) -> bool:
        read.append(self.log.path)
        return original(self, budget)

    monkeypatch.setattr(SessionTracker, "refresh", counting)
    return read


def _folded_to(index: HomeIndex) -> dict[Path, int]:
    """Each log the index follows, parked or not, and how far it is folded."""
    logs = {f: t.log for f, t in index.trackers.items()} | {
        f: p.log for f, p in index.parked.items()
    }
    return {log.path: index.offset(folder) or 0 for folder, log in logs.items()}


@pytest.mark.parametrize("source", HOMES, ids=[h.name for h in HOMES])
def test_a_restart_resumes_from_the_checkpoints_and_equals_a_cold_fold(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(source.name)
    home = tmp_path / "home"
    rest = _cut_home(source, home, rng)
    store = DatabaseCheckpoints()
    first = Hub(home, "sdk", store=store)
    first.cold_start()
    assert first.flush_checkpoints() == len(first.index.folders) > 0
    _grow(rest)

    read = _count_folds(monkeypatch)
    restarted = Hub(home, "sdk", store=store)
    restarted.cold_start()
    resumed_from = _folded_to(restarted.index)  # the restored trackers went on from their offsets
    cold = Hub(home, "sdk")
    cold.cold_start()
    assert _shots(restarted) == _shots(cold)
    assert set(read) <= set(resumed_from)
    progress = restarted.view().progress
    assert progress.done and progress.sessions_done == progress.sessions_total
    grown = sum(len(b"".join(f)) for f in rest.values())
    # Only what was appended since the checkpoint was read again, not the whole home.
    assert restarted.view().progress.bytes_total - grown <= sum(
        p.stat().st_size for p in resumed_from
    )


def test_the_hub_parks_what_nothing_changes_and_takes_it_back_when_its_log_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = home_of_fixtures(tmp_path / "staged", ["prune-heavy", "cjk-heavy", "pace-steady"])
    home = tmp_path / "home"
    rest = _cut_home(staged, home, random.Random(5))
    store = DatabaseCheckpoints()
    encoded: list[Path] = []
    encode = store.encode

    def counted(tracker: SessionTracker) -> bytes:
        encoded.append(tracker.log.path)
        return encode(tracker)

    monkeypatch.setattr(store, "encode", counted)
    hub = Hub(home, "sdk", store=store)
    hub.cold_start()
    folders = hub.index.folders
    assert len(folders) == len(session_logs(home)) >= 3
    assert not hub.index.trackers and hub.index.parked.keys() == folders  # none is live
    assert hub.flush_checkpoints() == len(folders)
    assert sorted(encoded) == sorted(log.path for log in session_logs(home))  # each once

    grown, frames = next((path, f) for path, f in sorted(rest.items()) if f)
    with grown.open("ab") as handle:
        handle.write(b"".join(frames))
    hub.sync([grown])
    assert set(hub.index.trackers) == {grown.parent}  # taken back to fold what it gained
    cold = Hub(home, "sdk")
    cold.cold_start()
    assert _shots(hub) == _shots(cold)

    assert hub.flush_checkpoints() == 1 and grown.parent in hub.index.trackers  # it changed
    assert hub.flush_checkpoints() == 0 and not hub.index.trackers  # quiet since: parked
    saved = FoldCheckpoint.objects.get(home=str(home), folder=str(grown.parent.relative_to(home)))
    assert bytes(saved.blob) == hub.index.blob(grown.parent)  # parked as saved, not again
    assert len(encoded) == len(folders) + 1


def test_a_young_sessions_forecast_goes_by_the_paces_of_the_whole_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold start publishes each session as it is folded (here: at once); a young
    session's forecast goes by its model's pace in the other sessions, which are not all
    folded yet then. Once the home is read, it shows what a fold of the whole home shows,
    whatever order the sessions came in (a restart's differs from a cold start's)."""
    home = home_of_fixtures(tmp_path / "home", YOUNG_AMONG_OTHERS)
    monkeypatch.setattr(hub_module, "PROGRESS_EVERY", 0.0)
    hub = Hub(home, "sdk", cores=1)
    hub.cold_start()
    whole = HomeIndex(home)
    whole.refresh()
    young = {
        f: whole.snapshot(f).forecasts
        for f in whole.folders
        if whole.snapshot(f).forecasts.prior  # forecast by the others' pace
    }
    assert len(young) >= 2
    shown = {view.snapshot.path: view.snapshot.forecasts for view in hub.view().sessions.values()}
    assert {f: shown[whole.snapshot(f).path] for f in young} == young


def test_a_restart_reads_only_the_bytes_written_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    rest = _cut_home(FIXTURE_HOMES / "auto-compact", home, random.Random(3))
    store = DatabaseCheckpoints()
    Hub(home, "sdk", store=store).cold_start()
    first = Hub(home, "sdk", store=store)
    first.cold_start()
    first.flush_checkpoints()
    offsets = _folded_to(first.index)
    _grow(rest)
    seen: list[tuple[Path, int]] = []
    original = SessionTracker.refresh

    def recording(self: SessionTracker, budget: Budget = UNBOUNDED) -> bool:
        seen.append((self.log.path, self.tail.offset))
        return original(self, budget)

    monkeypatch.setattr(SessionTracker, "refresh", recording)
    Hub(home, "sdk", store=store).cold_start()
    assert seen, "nothing was read after the restart"
    assert all(offset == offsets[path] > 0 for path, offset in seen)


@pytest.mark.parametrize("change", ["replaced", "truncated", "rewritten"])
def test_a_log_changed_behind_a_checkpoint_is_folded_again(change: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    store = DatabaseCheckpoints()
    first = Hub(home, "sdk", store=store)
    first.cold_start()
    first.flush_checkpoints()
    (log,) = [entry.path for entry in session_logs(home)]
    frames = frames_of(log)
    if change == "replaced":  # a new file (inode) with other content
        staged = log.with_name("new.tmp")
        staged.write_bytes(b"".join(frames[: len(frames) // 2]))
        staged.replace(log)
    elif change == "truncated":
        log.write_bytes(b"".join(frames[: len(frames) // 2]))
    else:  # the same size, other bytes: the first frames of another real log
        other = frames_of(session_logs(FIXTURE_HOMES / "manual-compact")[0].path)
        data = b"".join(other)[: log.stat().st_size]
        with log.open("r+b") as handle:
            handle.write(data)
    restarted = Hub(home, "sdk", store=store)
    restarted.cold_start()
    cold = Hub(home, "sdk")
    cold.cold_start()
    assert _shots(restarted) == _shots(cold)
    assert FoldCheckpoint.objects.filter(home=str(home)).count() == 0  # the stale one went


@pytest.fixture
def served(tmp_path: Path, settings: Any) -> Path:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home, "PROFILE": "sdk"}
    return home


@pytest.mark.asyncio
async def test_no_request_and_no_socket_ever_folds(
    served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from asgiref.sync import sync_to_async

    from dshweb.asgi import application

    def setup() -> tuple[Client, bytes]:
        hub = service.current_hub()
        hub.wait_ready(60)
        hub.stop()  # no thread folds from here on: only requests could
        user = get_user_model().objects.create_user(
            "u", password="pw-for-tests-only", is_staff=True
        )
        client = Client()
        client.force_login(user)
        return client, f"sessionid={client.cookies['sessionid'].value}".encode()

    client, cookie = await sync_to_async(setup)()
    hub = service.current_hub()
    rounds = hub.rounds
    read = _count_folds(monkeypatch)
    log = session_logs(served)[0].path
    with log.open("ab") as handle:  # the log grows: a request that folded would see it
        handle.write(frames_of(log)[-1])

    def pages() -> list[int]:
        return [
            client.get(url).status_code
            for url in ("/", "/?q=auto", "/homes/local/sessions/auto-compact/", "/settings/")
        ]

    assert await sync_to_async(pages)() == [200, 200, 200, 200]
    for path in ("/ws/sessions/", "/ws/homes/local/sessions/auto-compact/"):
        communicator = WebsocketCommunicator(
            application,
            path,
            headers=[
                (b"host", b"127.0.0.1:8000"),
                (b"origin", b"http://127.0.0.1:8000"),
                (b"cookie", cookie),
            ],
        )
        connected, _ = await communicator.connect(timeout=10)
        assert connected
        assert "auto-compact" in await communicator.receive_from(timeout=10)
        await communicator.disconnect()
    assert read == []
    assert hub.rounds == rounds


def test_a_page_asked_for_during_a_cold_start_says_how_far_it_got(
    served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = get_user_model().objects.create_user("u", password="pw-for-tests-only")
    client = Client()
    client.force_login(user)
    monkeypatch.setattr(timing, "FIRST_PAGE_WAIT", 0.0)
    release = _hold_the_first_fold(monkeypatch)
    try:
        html = client.get("/").content.decode()
    finally:
        release()
    assert 'id="fold-progress"' in html
    assert 'data-state="folding"' in html
    service.current_hub().wait_ready(60)
    html = client.get("/").content.decode()
    assert 'data-state="folding"' not in html
    assert 'data-session-id="auto-compact"' in html


def test_only_the_first_pages_of_a_start_wait_for_the_first_pass(
    served: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = _hold_the_first_fold(monkeypatch)
    try:
        hub = service.current_hub()
        started = time.monotonic()
        first = hub.wait_ready(0.5)  # asked at once: waits for the round, up to 0.5 s
        waited = time.monotonic() - started
        later = time.monotonic()
        again = hub.wait_ready(0.5)  # asked after 0.5 s of a round still under way
        at_once = time.monotonic() - later
    finally:
        release()
    assert not first.progress.done and not again.progress.done
    assert 0.4 < waited < 2.0
    assert at_once < 0.1  # every page of a long cold start used to wait the 0.5 s


def _hold_the_first_fold(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make the hub's first round wait until the returned function is called."""
    import threading

    gate = threading.Event()
    original = SessionTracker.refresh

    def held(self: SessionTracker) -> bool:
        gate.wait(30)
        return original(self)

    monkeypatch.setattr(SessionTracker, "refresh", held)
    return gate.set


def test_a_pass_that_changes_nothing_keeps_the_view(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    hub = Hub(home, "sdk")
    first = hub.cold_start()
    assert first.listing is first.listing  # derived orders are computed once per view
    assert hub.sync(None) is first  # a rescan and a liveness read that found nothing new
    log = session_logs(home)[0].path
    with log.open("ab") as handle:
        handle.write(frames_of(log)[-1])
    assert hub.sync([log]) is not first


@pytest.mark.parametrize("grown", [0, 1])
def test_a_grown_view_equals_a_cold_fold_even_when_two_folders_hold_one_session(
    tmp_path: Path, grown: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each round copies the view and takes again only what changed; the result is the
    view a cold start of the same files makes, including when a session's folder was
    copied under another project (one id, two folders: the same one is shown)."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "subagent-parent", home)
    log = max(session_logs(home), key=lambda log: log.path.stat().st_size)
    twin = home / "sessions" / "--elsewhere--" / log.session_dir.name
    shutil.copytree(log.session_dir, twin)
    logs = [log.path, twin / log.path.name]
    frames = frames_of(log.path)
    quarter = len(frames) // 4
    assert quarter > 0
    for path, cut in zip(logs, (quarter, 2 * quarter), strict=True):  # two lengths
        path.write_bytes(b"".join(frames[:cut]))
    hub = Hub(home, "sdk")
    hub.cold_start()
    with logs[grown].open("ab") as handle:  # 3/4 and 2/4, or 1/4 and 3/4
        handle.write(b"".join(frames[(grown + 1) * quarter : 3 * quarter]))
    hub.sync([logs[grown]])
    cold = Hub(home, "sdk")
    cold.cold_start()
    assert _shots(hub) == _shots(cold)
    assert len(hub.view().sessions) == len(session_logs(home)) - 1
    # The folder DSH files the session in is shown, though the copy may be the longer.
    shown = hub.view().sessions[log.session_dir.name].snapshot
    assert shown.path == str(log.path.relative_to(home))


def test_a_change_made_before_the_watch_is_set_up_is_not_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    home = tmp_path / "home"
    rest = _cut_home(FIXTURE_HOMES / "auto-compact", home, random.Random(5))
    real_watch = hub_module.HomeWatch  # type: ignore[attr-defined]
    written = threading.Event()

    def late_watch(*args: Any, **kwargs: Any) -> Any:
        _grow(rest)  # written after the cold start, before the kernel is asked to watch
        written.set()
        return real_watch(*args, **kwargs)

    monkeypatch.setattr(hub_module, "HomeWatch", late_watch)
    hub = Hub(home, "sdk")
    hub.start()
    try:
        assert written.wait(30)
        cold = Hub(home, "sdk")
        cold.cold_start()
        grown = cold.view().session("auto-compact")
        deadline = time.monotonic() + 10  # well before the next rescan (2 min)
        while hub.view().session("auto-compact") != grown:
            assert time.monotonic() < deadline, "the change waited for the next rescan"
            time.sleep(0.05)
    finally:
        hub.stop()


def test_every_session_of_a_cold_start_is_told_to_the_listeners(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long cold start publishes its progress as it folds: what each publish showed is
    told to the listeners then (a collector writes it), and the last change holds only
    the rest; together, every session once, but a young one (forecast by the others'
    pace) told again once the whole home's pace is known."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "subagent-parent", home)
    shutil.copytree(
        FIXTURE_HOMES / "auto-compact" / "sessions", home / "sessions", dirs_exist_ok=True
    )
    monkeypatch.setattr("dshweb.live.hub.PROGRESS_EVERY", 0.0)  # a publish after each session
    hub = Hub(home, "sdk")
    told: list[frozenset[str]] = []
    hub.subscribe(lambda change: told.append(change.changed))
    view = hub.cold_start()
    assert len(told) >= 2 and all(told)  # some told while it folded, never an empty change
    each = [s for changed in told for s in changed]
    assert set(each) == set(view.sessions)
    again = {s for s in each if each.count(s) > 1}
    assert again <= {s for s, v in view.sessions.items() if v.snapshot.forecasts.prior}
    assert all(each.count(s) == 2 for s in again)


def test_a_log_bigger_than_a_slice_is_folded_on_pass_by_pass(tmp_path: Path) -> None:
    """A cold start folds a slice of each log; the rounds that follow fold the rest, the
    progress staying short of done until every log is folded to its end."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    cold = Hub(home, "sdk")
    cold.cold_start()
    hub = Hub(home, "sdk")
    hub.index.budget = Budget(events=40, bytes=UNBOUNDED.bytes)
    first = hub.cold_start()
    assert hub.index.unfinished and not first.progress.done
    assert first.progress.sessions_done == 0 < first.progress.bytes_done
    assert not first.sessions["auto-compact"].read_to_end  # its past, slice by slice
    rounds = 0
    while hub.index.unfinished:
        view = hub.sync(set(), liveness=False)
        rounds += 1
        assert rounds < 1_000
        assert view.progress.done is not bool(hub.index.unfinished)
        assert view.sessions["auto-compact"].read_to_end is not bool(hub.index.unfinished)
    assert rounds >= 5
    assert view.progress.sessions_done == view.progress.sessions_total == 1
    want = cold.view().sessions["auto-compact"]
    got = view.sessions["auto-compact"]
    assert (got.snapshot, got.gauge) == (want.snapshot, want.gauge)


def test_a_folder_name_that_is_not_utf8_round_trips_through_the_checkpoints(
    tmp_path: Path,
) -> None:
    """A session folder whose name is not UTF-8 (Linux allows any bytes): its checkpoint
    is stored (no database text takes a lone surrogate) and taken back."""
    from dshweb.collect.checkpoints import path_stored, stored_path

    for name in ("plain", "100%", "caf\udce9-%41", "中文"):
        assert path_stored(stored_path(name)) == name
    assert stored_path("中文") == "中文" and stored_path("plain") == "plain"
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "auto-compact", home)
    (log,) = session_logs(home)
    odd = log.session_dir.parent / os.fsdecode(b"caf\xe9 %41")
    log.session_dir.rename(odd)
    store = DatabaseCheckpoints()
    first = Hub(home, "sdk", store=store)
    first.cold_start()
    assert first.flush_checkpoints() == 1
    again = Hub(home, "sdk", store=store)
    restored = store.restore(home, {log.session_dir: log for log in session_logs(home)})
    assert [folder for folder, _, _ in restored] == [odd]
    again.cold_start()
    assert _shots(again) == _shots(first)


def test_the_home_is_folded_through_once_the_view_showing_it_is_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Readiness follows read_through_at: while the view of the last round is still being
    # made (a snapshot per session; seconds on a big home), the one out shows no session.
    hub = Hub(FIXTURE_HOMES / "web-presets", "sdk")
    seen: list[tuple[float | None, int]] = []
    take = HomeIndex.snapshot

    def snapshot(index: HomeIndex, folder: Path) -> Any:
        seen.append((hub.read_through_at, len(hub.view().sessions)))
        return take(index, folder)

    monkeypatch.setattr(HomeIndex, "snapshot", snapshot)
    before = hub.read_through_at
    view = hub.cold_start()
    assert before is None and seen and all(at is None for at, _ in seen), seen
    assert hub.read_through_at is not None and len(view.sessions) == 2


def test_the_hub_spreads_a_big_home_over_its_cores_and_shows_what_one_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = home_of_fixtures(tmp_path / "home", ["prune-heavy", "subagent-loop", "window-switch"])
    spreads: list[int] = []
    real = spread.fold_spread

    def counted(*args: Any, **kwargs: Any) -> set[Path]:
        found = real(*args, **kwargs)
        spreads.append(len(found))
        return found

    monkeypatch.setattr(hub_module, "fold_spread", counted)
    one = Hub(home, "sdk", cores=1).cold_start()
    small = Hub(home, "sdk", cores=2).cold_start()
    assert spreads == []  # one core, then a home under MIN_BYTES: not worth the workers
    monkeypatch.setattr(spread, "MIN_BYTES", 0)
    spread_hub = Hub(home, "sdk", cores=2, store=DatabaseCheckpoints())
    spread_view = spread_hub.cold_start()
    assert spreads == [len(session_logs(home))]  # every session came from a worker
    # ... and each is checkpointed, so a restart reads none of them again.
    assert spread_hub.flush_checkpoints() == len(session_logs(home))
    shots = {key: view.snapshot for key, view in one.sessions.items()}
    assert len(shots) == len(session_logs(home))
    assert {key: view.snapshot for key, view in small.sessions.items()} == shots
    assert {key: view.snapshot for key, view in spread_view.sessions.items()} == shots
