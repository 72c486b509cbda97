"""Alerts end to end through the real ASGI application: rules fire from real frames
appended to a real log, and are told by a signed webhook to a real local receiver, an
email to a real SMTP server (aiosmtpd) and a notice on the user's socket; a receiver that
is down gets its retries and then a recorded failure, and the dashboard keeps working.

A real fixture log is copied into a temporary home cut short; the rule is made; the rest
of the log is appended frame by frame, as DSH writes it.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast
from unittest.mock import patch

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.alerts.models import AlertDelivery, AlertFiring, AlertRule
from dshweb.alerts.watcher import AlertWatcher, stop_alert_watcher
from dshweb.asgi import application
from dshweb.core.alerts.firing import EVENTS_PER_LOOK
from dshweb.core.fold.compactions import Compaction
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.log.home import session_logs
from dshweb.live import timing
from dshweb.live.hub import HomeChange, HomeView, SessionView
from dshweb.live.publisher import stop_publisher
from dshweb.live.service import current_hub
from tests.conftest import FIXTURE_HOMES
from tests.support.alert_receivers import first_look_line, smtp_server, webhook_receiver
from tests.support.logbuilder import frames_of
from tests.support.snapshots import fixture_snapshot

pytestmark = [pytest.mark.django_db(transaction=True)]

ORIGIN = (b"origin", b"http://127.0.0.1:8000")
HOST = (b"host", b"127.0.0.1:8000")
WAIT = 15.0


RECEIVERS = {"WEBHOOK_ALLOWED_HOSTS": ("127.0.0.1",), "MAIL_ALLOWED_DOMAINS": ("example.test",)}
"""The tests' receivers listed as staff lists internal ones (every delivery test uses
:func:`cut_home`)."""


def cut_home(tmp_path: Path, settings: Any, name: str, share: float) -> tuple[Path, list[bytes]]:
    """A copy of fixture home ``name`` whose log keeps its first ``share`` of frames; the
    log's path and the frames left to append."""
    target = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / name, target)
    log = session_logs(target)[0].path
    frames = frames_of(log)
    cut = int(len(frames) * share)
    log.write_bytes(b"".join(frames[:cut]))
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": target, "PROFILE": "sdk"} | RECEIVERS
    return log, frames[cut:]


def last_seq(home: Path) -> int:
    index = HomeIndex(home)
    index.refresh()
    (tracker,) = index.trackers.values()
    return tracker.meter.last_seq


@pytest_asyncio.fixture
async def user_cookie() -> tuple[Any, bytes]:
    def login() -> tuple[Any, str]:
        user = get_user_model().objects.create_user("alerted", password="pw-for-tests-only")
        client = Client()
        client.force_login(user)
        return user, str(client.cookies["sessionid"].value)

    user, session = await database_sync_to_async(login)()
    return user, b"sessionid=" + session.encode()


@pytest_asyncio.fixture
async def stop() -> AsyncIterator[None]:
    yield
    await stop_alert_watcher()
    await stop_publisher()


@pytest.fixture
def mail(settings: Any) -> Iterator[Any]:
    with smtp_server() as (mailbox, port):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
        yield mailbox


async def socket_of(cookie: bytes) -> WebsocketCommunicator:
    """The sessions list's socket, signed in, past its first page."""
    communicator = WebsocketCommunicator(
        application, "/ws/sessions/", headers=[HOST, ORIGIN, (b"cookie", cookie)]
    )
    connected, _ = await communicator.connect(timeout=WAIT)
    assert connected
    await communicator.receive_from(timeout=WAIT)
    return communicator


async def append(log: Path, frames: list[bytes]) -> None:
    for frame in frames:
        with log.open("ab") as handle:
            handle.write(frame)
        await asyncio.sleep(0.005)


async def until(check: Any, timeout: float = WAIT) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if value := await sync_to_async(check)():
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {timeout} s")


async def first_look(caplog: pytest.LogCaptureFixture, rules: int, looks: int = 1) -> None:
    """Until the watcher has looked at every session under ``rules`` rules ``looks``
    times (it logs each): what the log held by then is old to them."""
    said = first_look_line(rules)
    await until(lambda: sum(said in r.getMessage() for r in caplog.records) >= looks)


async def alert_notices(communicator: WebsocketCommunicator, count: int) -> list[str]:
    notices: list[str] = []
    while len(notices) < count:
        message = str(await communicator.receive_from(timeout=WAIT))
        if 'id="alert-toasts"' in message:
            notices.append(message)
    return notices


def make_rule(user: Any, **fields: Any) -> AlertRule:
    fields = {"name": "folds", "condition": "folded", "cooldown_seconds": 0} | fields
    return AlertRule.objects.create(owner=user, webhook_secret="s3cret-" + "x" * 40, **fields)


@pytest.mark.asyncio
async def test_a_compaction_appended_to_a_real_log_is_told_three_ways(
    tmp_path: Path,
    settings: Any,
    user_cookie: tuple[Any, bytes],
    mail: Any,
    stop: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    log, rest = cut_home(tmp_path, settings, "auto-compact", 0.3)
    cut = last_seq(tmp_path / "home")
    compactions_to_come = [
        f for f in fixture_snapshot("auto-compact").ledger.compactions if f.seq > cut
    ]
    assert compactions_to_come  # the cut leaves folds to append
    user, cookie = user_cookie
    with webhook_receiver(lambda: rule.webhook_secret) as receiver:
        rule = await database_sync_to_async(make_rule)(
            user, webhook_url=receiver.url, email_to="me@example.test"
        )
        communicator = await socket_of(cookie)
        await first_look(caplog, rules=1)  # the folds in the log so far are old to the rule
        assert await database_sync_to_async(AlertFiring.objects.count)() == 0
        await append(log, [b"".join(rest)])  # in one write: one look finds every fold
        notices = await alert_notices(communicator, len(compactions_to_come))
        await until(lambda: len(receiver.received) == len(compactions_to_come))
        await until(lambda: len(mail.messages) == len(compactions_to_come))

    # One firing per fold appended, keyed by its seq, none for the folds before the rule.
    firings = await database_sync_to_async(
        lambda: list(AlertFiring.objects.order_by("fired_at", "id").values_list("key", "summary"))
    )()
    assert firings == [
        (str(f.seq), f"automatic compaction: {f.before:,} → {f.after:,} tokens")
        for f in compactions_to_come
    ]
    # A notice per fold, in seq order (one owner's notices go one at a time, oldest
    # first); the webhooks run side by side, so they arrive in any order.
    assert len(compactions_to_come) >= 2
    for notice, compaction in zip(notices, compactions_to_come, strict=True):
        assert f"{compaction.before:,} → {compaction.after:,}" in notice
    assert sorted(int(hook.body["key"]) for hook in receiver.received) == [
        f.seq for f in compactions_to_come
    ]
    assert all(
        hook.body["summary"] == dict(firings)[hook.body["key"]] for hook in receiver.received
    )
    first = compactions_to_come[0]
    hook = next(hook for hook in receiver.received if hook.body["key"] == str(first.seq))
    assert hook.signature_ok
    assert hook.body["rule"] == {"id": rule.pk, "name": "folds", "condition": "folded"}
    assert (hook.body["home"], hook.body["session"]) == ("local", "auto-compact")
    assert hook.body["key"] == str(first.seq)
    assert hook.body["url"] == "/homes/local/sessions/auto-compact/"
    message = mail.messages[0]
    assert message["To"] == "me@example.test"
    assert message["Subject"].startswith("[dshweb] folds: ")
    bodies = sorted(str(m.get_payload()) for m in mail.messages)
    for compaction in compactions_to_come:
        told = f"automatic compaction: {compaction.before:,} → {compaction.after:,} tokens"
        assert sum(told in body for body in bodies) == 1
    assert 'data-headline="folds: ' in notices[0] and f"{first.before:,}" in notices[0]
    states = await database_sync_to_async(
        lambda: sorted(AlertDelivery.objects.values_list("channel", "state", "attempts"))
    )()
    assert states == sorted(
        (channel, "sent", 1)
        for channel in ("browser", "webhook", "email")
        for _ in compactions_to_come
    )

    # A watcher started again (a restart) fires nothing already told.
    await stop_alert_watcher()
    again = AlertWatcher(current_hub(), "local")
    task = asyncio.create_task(again.run())
    await first_look(caplog, rules=1, looks=2)
    task.cancel()
    assert again.fired == 0
    assert await database_sync_to_async(AlertFiring.objects.count)() == len(compactions_to_come)
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_a_receiver_that_is_down_gets_retries_then_a_recorded_failure(
    tmp_path: Path,
    settings: Any,
    user_cookie: tuple[Any, bytes],
    stop: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    log, rest = cut_home(tmp_path, settings, "auto-compact", 0.3)
    user, cookie = user_cookie
    # A port held bound and never listening refuses every connection, and no other test
    # can take it meanwhile (a port found free and let go can be another test's server).
    refusing = socket.socket()
    refusing.bind(("127.0.0.1", 0))
    down = f"http://127.0.0.1:{refusing.getsockname()[1]}/hook"
    await database_sync_to_async(make_rule)(user, webhook_url=down, cooldown_seconds=3600)
    with (
        refusing,
        patch.object(timing, "ALERT_RETRY_FIRST", 0.05),
        patch.object(timing, "ALERT_ATTEMPTS", 3),
    ):
        communicator = await socket_of(cookie)
        await first_look(caplog, rules=1)
        await append(log, rest)
        await alert_notices(communicator, 1)
        webhook = await until(
            lambda: AlertDelivery.objects.filter(channel="webhook", state="failed").first()
        )
    assert webhook.attempts == 3
    assert webhook.last_error == "could not deliver (no HTTP answer)"
    assert webhook.next_attempt_at is None
    # The cooldown held the later folds back: one firing; its browser notice went out.
    assert await database_sync_to_async(AlertFiring.objects.count)() == 1
    browser = await database_sync_to_async(AlertDelivery.objects.get)(channel="browser")
    assert (browser.state, browser.attempts) == ("sent", 1)
    # The dashboard keeps working: a page shows the session as folded to the end.
    page = await sync_to_async(_page_as, thread_sensitive=False)(cookie)
    assert 'data-session-id="auto-compact"' in page
    await communicator.disconnect()


def _page_as(cookie: bytes) -> str:
    client = Client()
    client.cookies["sessionid"] = cookie.decode().split("=", 1)[1]
    answer = client.get("/")
    assert answer.status_code == 200
    return answer.content.decode()


@pytest.mark.asyncio
@pytest.mark.parametrize(("cooldown", "once"), [(0, False), (3600, True)])
async def test_a_band_rule_fires_once_each_time_the_band_is_reached(
    tmp_path: Path,
    settings: Any,
    user_cookie: tuple[Any, bytes],
    stop: None,
    caplog: pytest.LogCaptureFixture,
    cooldown: int,
    once: bool,
) -> None:
    # pace-steady grows into tight and folds back to moderate again and again.
    log, rest = cut_home(tmp_path, settings, "pace-steady", 0.1)
    user, cookie = user_cookie
    await database_sync_to_async(make_rule)(
        user, name="tight", condition="band", band="tight", cooldown_seconds=cooldown
    )
    communicator = await socket_of(cookie)
    await first_look(caplog, rules=1)
    await append(log, rest)
    await asyncio.sleep(2.0)  # the last changes looked at
    firings = await database_sync_to_async(
        lambda: list(AlertFiring.objects.order_by("id").values_list("summary", "cleared_at"))
    )()
    # A "tight" rule holds in tight and past it (critical): which one a look finds depends on
    # how the appended frames were batched.
    said = ("context tight: ", "context critical: ")
    assert firings and all(summary.startswith(said) for summary, _ in firings), firings
    if once:
        assert len(firings) == 1
    else:
        # Each firing but the last was over (the fold took the band back) before the next.
        assert len(firings) >= 3
        assert all(cleared is not None for _, cleared in firings[:-1])
    await communicator.disconnect()


@pytest.mark.asyncio
async def test_an_overflow_recovery_and_a_failed_compaction_in_a_real_log_fire_their_rules(
    tmp_path: Path,
    settings: Any,
    user_cookie: tuple[Any, bytes],
    stop: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # fold-failures: the provider refused a request as too large (DSH folded and sent it
    # again), then a summary came back larger than what it replaced (compaction/end error).
    log, rest = cut_home(tmp_path, settings, "fold-failures", 0.05)
    compactions = fixture_snapshot("fold-failures").ledger.compactions
    overflow, failed = compactions[0], compactions[1]
    assert last_seq(tmp_path / "home") < overflow.seq
    user, cookie = user_cookie

    def rules() -> None:
        make_rule(user, name="overflow", condition="overflow")
        make_rule(user, name="failed", condition="fold-failed")

    await database_sync_to_async(rules)()
    communicator = await socket_of(cookie)
    await first_look(caplog, rules=2)
    await append(log, rest)
    await alert_notices(communicator, 2)
    fired = await database_sync_to_async(
        lambda: list(AlertFiring.objects.order_by("id").values_list("rule__name", "key", "summary"))
    )()
    assert fired == [
        (
            "overflow",
            str(overflow.seq),
            f"overflow compaction: {overflow.before:,} → {overflow.after:,} tokens",
        ),
        ("failed", str(failed.seq), f"automatic compaction failed: {failed.error}"),
    ]
    assert failed.error is not None and failed.error.startswith(
        "summary is not smaller than the shadowed content"
    )
    await communicator.disconnect()


def look(watcher: AlertWatcher, home: Path, name: str, at_seq: int | None) -> None:
    """``watcher`` looks at fixture session ``name`` folded through ``at_seq`` (its log
    read to the end): whatever the log gained since its last look is one change."""
    snapshot = fixture_snapshot(name, at_seq)
    session = SessionView(snapshot, context_gauge(snapshot), 1, True)
    view = HomeView(home, {name: session}, name="local")
    watcher._take(HomeChange(view, frozenset({name}), frozenset()))
    watcher._evaluate({name})


def fired() -> list[tuple[str, str, str]]:
    """Each firing, oldest first: its rule, its key and its summary."""
    return list(AlertFiring.objects.order_by("id").values_list("rule__name", "key", "summary"))


def fired_for(name: str, compaction: Compaction) -> tuple[str, str, str]:
    """The firing of rule ``name`` for ``fold`` that ended well."""
    kind = "prune pass" if compaction.kind == "prune" else f"{compaction.kind} compaction"
    return (
        name,
        str(compaction.seq),
        f"{kind}: {compaction.before:,} → {compaction.after:,} tokens",
    )


def test_the_compactions_one_look_finds_are_each_told_in_order_and_after_a_restart(
    tmp_path: Path,
) -> None:
    user = get_user_model().objects.create_user("batched", password="pw-for-tests-only")
    make_rule(user, webhook_url="https://hooks.example.test/x", email_to="me@example.test")
    compactions = fixture_snapshot("pace-steady").ledger.compactions
    assert len(compactions) == 10
    watcher = AlertWatcher(cast(Any, None), "local")  # looked at by hand: no source
    look(watcher, tmp_path, "pace-steady", compactions[0].end_seq)  # first sight: old to the rule
    assert watcher.fired == 0
    look(watcher, tmp_path, "pace-steady", compactions[3].end_seq)  # three folds since
    assert fired() == [fired_for("folds", compaction) for compaction in compactions[1:4]]
    deliveries = list(AlertDelivery.objects.order_by("id").values_list("firing__key", "channel"))
    assert deliveries == [
        (str(compaction.seq), channel)
        for compaction in compactions[1:4]
        for channel in ("browser", "webhook", "email")
    ]
    look(watcher, tmp_path, "pace-steady", compactions[3].end_seq)  # nothing new: nothing told
    assert watcher.fired == 3

    # Started again: what was told is taken back from the firings; what came since is told.
    again = AlertWatcher(cast(Any, None), "local")
    look(again, tmp_path, "pace-steady", compactions[3].end_seq)
    assert again.fired == 0
    look(again, tmp_path, "pace-steady", None)
    assert again.fired == 6
    assert fired() == [fired_for("folds", compaction) for compaction in compactions[1:]]


def test_a_failed_and_a_done_compaction_of_one_look_each_go_to_their_own_rule(
    tmp_path: Path,
) -> None:
    user = get_user_model().objects.create_user("failing", password="pw-for-tests-only")
    make_rule(user, name="done", condition="folded")
    make_rule(user, name="failed", condition="fold-failed")
    overflow, failed, done = fixture_snapshot("fold-failures").ledger.compactions[:3]
    assert (overflow.kind, failed.status, done.status) == ("overflow", "failed", "done")
    watcher = AlertWatcher(cast(Any, None), "local")
    look(watcher, tmp_path, "fold-failures", overflow.seq - 1)  # first sight: no fold yet
    look(watcher, tmp_path, "fold-failures", done.end_seq)
    assert fired() == [
        fired_for("done", overflow),
        fired_for("done", done),
        ("failed", str(failed.seq), f"automatic compaction failed: {failed.error}"),
    ]


def test_many_compactions_fire_none_at_first_sight_and_the_newest_few_after_an_absence(
    tmp_path: Path,
) -> None:
    user = get_user_model().objects.create_user("pruned", password="pw-for-tests-only")
    make_rule(user)
    compactions = fixture_snapshot("prune-heavy").ledger.compactions
    assert len(compactions) > 100
    cold = AlertWatcher(cast(Any, None), "local")
    look(cold, tmp_path, "prune-heavy", None)  # a home read for the first time
    assert cold.fired == 0

    # A watcher that saw the session early (and had nothing to tell: its firings are
    # none), then its next look after a long absence: the newest few, in seq order.
    early = AlertWatcher(cast(Any, None), "local")
    look(early, tmp_path, "prune-heavy", compactions[5].end_seq)
    look(early, tmp_path, "prune-heavy", None)
    assert fired() == [
        fired_for("folds", compaction) for compaction in compactions[-EVENTS_PER_LOOK:]
    ]
    again = AlertWatcher(cast(Any, None), "local")
    look(again, tmp_path, "prune-heavy", None)
    assert again.fired == 0


def test_a_rule_edited_into_a_compaction_rule_starts_afresh(tmp_path: Path) -> None:
    """What the rule saw as a band rule says nothing of the folds: the ones its session had
    when it was edited are old to it, the ones after are told."""
    user = get_user_model().objects.create_user("edited", password="pw-for-tests-only")
    rule = make_rule(user, name="tight", condition="band", band="tight")
    compactions = fixture_snapshot("pace-steady").ledger.compactions
    watcher = AlertWatcher(cast(Any, None), "local")
    look(watcher, tmp_path, "pace-steady", compactions[4].end_seq)
    rule.name, rule.condition = "folds", "folded"
    rule.save()
    watcher._rules_read_at = -float("inf")  # the rules are read again at the next look
    look(watcher, tmp_path, "pace-steady", compactions[6].end_seq)
    assert watcher.fired == 0
    look(watcher, tmp_path, "pace-steady", None)
    assert fired() == [fired_for("folds", compaction) for compaction in compactions[7:]]


def test_a_log_still_read_in_slices_is_looked_at_once_it_is_read(tmp_path: Path) -> None:
    """A big log read for the first time shows its past slice by slice: its folds are
    not news. The watcher looks at the session once it is read to its end, at first
    sight, where folds older than the rule fire nothing."""
    user = get_user_model().objects.create_user("sliced", password="pw-for-tests-only")
    make_rule(user)
    compactions = fixture_snapshot("auto-compact").ledger.compactions
    assert len(compactions) >= 2
    watcher = AlertWatcher(cast(Any, None), "local")  # looked at by hand: no source

    def look(at_seq: int | None, read_to_end: bool) -> None:
        snapshot = fixture_snapshot("auto-compact", at_seq)
        session = SessionView(snapshot, context_gauge(snapshot), 1, read_to_end)
        view = HomeView(tmp_path, {"auto-compact": session}, name="local")
        watcher._take(HomeChange(view, frozenset({"auto-compact"}), frozenset()))
        watcher._evaluate(set(watcher._changed))

    look(compactions[0].seq, read_to_end=False)  # the first slice: one fold of the past
    look(compactions[-2].seq, read_to_end=False)
    look(None, read_to_end=True)  # read: every fold in it happened before the rule
    assert watcher.fired == 0 and not AlertFiring.objects.exists()
