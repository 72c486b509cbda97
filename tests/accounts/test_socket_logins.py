"""Open sockets follow their sign-in, through the real ASGI application: a sign-out (the
real logout POST), a user made inactive, a new password or a deleted user closes every
socket of theirs at once (4401); what no signal says (a change made by another process,
an expired session) closes them at the next check; a sign-in that holds is left open."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from dshweb.accounts import socket_logins
from dshweb.accounts.logins import Login, logins_holding
from dshweb.asgi import application
from dshweb.live.publisher import stop_publisher
from tests.live.test_sockets import HOST, ORIGIN, WAIT, home

__all__ = ["home"]  # the fixture: a copy of the auto-compact fixture home

pytestmark = [pytest.mark.django_db(transaction=True)]

LIST = "/ws/sessions/"
SESSION = "/ws/homes/local/sessions/auto-compact/"
AT_ONCE = 1.0
"""Seconds within which a change this process hears of closes a socket (it takes a few
milliseconds; the rest is a loaded machine's slack)."""
FAST_CHECK = 0.2
"""The check's period in the tests of what no signal says."""


@pytest_asyncio.fixture
async def stop() -> AsyncIterator[None]:
    yield
    await stop_publisher()


class Browser:
    """One signed-in browser: its Django test client (for posts) and session cookie."""

    def __init__(self, name: str) -> None:
        users = get_user_model()
        self.user = users.objects.filter(username=name).first() or users.objects.create_user(
            name, password="pw-for-tests-only"
        )
        self.client = Client()
        self.client.force_login(self.user)
        self.key = str(self.client.cookies["sessionid"].value)

    @property
    def cookie(self) -> tuple[bytes, bytes]:
        return (b"cookie", b"sessionid=" + self.key.encode())


async def _browser(name: str = "watcher") -> Browser:
    return await database_sync_to_async(Browser)(name)


async def _open(path: str, browser: Browser) -> WebsocketCommunicator:
    """A signed-in socket of ``browser``, after its first message."""
    communicator = WebsocketCommunicator(application, path, headers=[HOST, ORIGIN, browser.cookie])
    connected, _ = await communicator.connect(timeout=WAIT)
    assert connected is True
    first = await communicator.receive_output(timeout=WAIT)
    assert first["type"] == "websocket.send", first
    return communicator


async def _closed(communicator: WebsocketCommunicator, within: float) -> int:
    """The code the socket closed with (messages before it are passed over); fails when it
    is still open after ``within`` seconds."""
    started = time.monotonic()
    while True:
        left = started + within - time.monotonic()
        assert left > 0 and not await communicator.receive_nothing(timeout=left), (
            f"still open after {within} s"
        )
        message = await communicator.receive_output(timeout=WAIT)
        if message["type"] == "websocket.close":
            return int(message["code"])


async def _still_open(communicator: WebsocketCommunicator, seconds: float) -> bool:
    """Not closed during ``seconds`` (its updates passed over)."""
    deadline = time.monotonic() + seconds
    while not await communicator.receive_nothing(timeout=max(0.0, deadline - time.monotonic())):
        if (await communicator.receive_output(timeout=WAIT))["type"] == "websocket.close":
            return False
    return True


@pytest.mark.asyncio
async def test_signing_out_closes_that_sessions_sockets_at_once(home: Path, stop: None) -> None:
    here, elsewhere = await _browser(), await _browser()
    sockets = [await _open(LIST, here), await _open(SESSION, here)]
    other = await _open(LIST, elsewhere)  # the same user, signed in on another browser
    answer = await database_sync_to_async(here.client.post)("/accounts/logout/")
    assert answer.status_code == 302
    for socket in sockets:
        assert await _closed(socket, AT_ONCE) == 4401
    # Nothing changed for the other browser's sign-in: its socket stays.
    assert await _still_open(other, 0.5)
    for socket in [*sockets, other]:
        await socket.disconnect()


def _deactivate(user: Any) -> None:
    user.is_active = False
    user.save()


def _new_password(user: Any) -> None:
    user.set_password("another-pw-for-tests")
    user.save()


def _delete(user: Any) -> None:
    user.delete()


@pytest.mark.asyncio
@pytest.mark.parametrize("change", [_deactivate, _new_password, _delete])
async def test_a_changed_account_closes_every_socket_of_its_user_at_once(
    home: Path, stop: None, change: Callable[[Any], None]
) -> None:
    one, two, bystander = await _browser(), await _browser(), await _browser("bystander")
    sockets = [await _open(LIST, one), await _open(SESSION, one), await _open(LIST, two)]
    unrelated = await _open(SESSION, bystander)
    await database_sync_to_async(change)(one.user)
    for socket in sockets:
        assert await _closed(socket, AT_ONCE) == 4401
    assert await _still_open(unrelated, 0.5)
    for socket in [*sockets, unrelated]:
        await socket.disconnect()


def _deactivated_by_another_process(browser: Browser) -> None:
    get_user_model().objects.filter(pk=browser.user.pk).update(is_active=False)


def _password_by_another_process(browser: Browser) -> None:
    get_user_model().objects.filter(pk=browser.user.pk).update(password="!another")


def _session_deleted(browser: Browser) -> None:
    Session.objects.filter(session_key=browser.key).delete()


def _session_expired(browser: Browser) -> None:
    expired = timezone.now() - timedelta(seconds=1)
    Session.objects.filter(session_key=browser.key).update(expire_date=expired)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "change",
    [
        _deactivated_by_another_process,
        _password_by_another_process,
        _session_deleted,
        _session_expired,
    ],
)
async def test_what_no_signal_says_closes_the_sockets_at_the_next_check(
    home: Path, stop: None, change: Callable[[Browser], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket_logins, "CHECK_EVERY", FAST_CHECK)
    browser, bystander = await _browser(), await _browser("bystander")
    sockets = [await _open(LIST, browser), await _open(SESSION, browser)]
    unrelated = await _open(LIST, bystander)
    await asyncio.sleep(FAST_CHECK * 3)  # checked a few times: a sign-in that holds stays
    assert await _still_open(sockets[0], 0) and await _still_open(unrelated, 0)
    await database_sync_to_async(change)(browser)  # a queryset's update: no signal
    for socket in sockets:
        assert await _closed(socket, FAST_CHECK + AT_ONCE) == 4401
    assert await _still_open(unrelated, FAST_CHECK * 3)
    for socket in [*sockets, unrelated]:
        await socket.disconnect()


@pytest.mark.asyncio
async def test_without_a_signal_nothing_closes_before_the_check(home: Path, stop: None) -> None:
    """The signals are what close a socket at once: a change they do not see waits for the
    check (the default period, far longer than this test waits)."""
    browser = await _browser()
    socket = await _open(LIST, browser)
    await database_sync_to_async(_deactivated_by_another_process)(browser)
    assert socket_logins.CHECK_EVERY >= 2 * AT_ONCE
    assert await _still_open(socket, AT_ONCE)
    await socket.disconnect()


def test_a_check_is_two_queries_whatever_the_number_of_sockets(
    django_assert_num_queries: Any,
) -> None:
    browsers = [Browser(f"user{n % 7}") for n in range(60)]
    logins = {Login(b.key, b.user.pk) for b in browsers}
    with django_assert_num_queries(2):
        assert logins_holding(logins) == logins


def test_a_login_holds_while_its_session_and_user_do() -> None:
    browser, other = Browser("watcher"), Browser("other")
    good = Login(browser.key, browser.user.pk)
    cases = {
        "its own": (good, True),
        "a user the session does not name": (Login(browser.key, other.user.pk), False),
        "a session that never was": (Login("x" * 32, browser.user.pk), False),
    }
    for name, (login, holds) in cases.items():
        assert (login in logins_holding({login})) is holds, name
    _session_expired(browser)
    assert logins_holding({good}) == set(), "expired"


@pytest.mark.asyncio
async def test_a_check_that_fails_is_logged_once_and_the_next_one_closes(
    home: Path, stop: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A check that raises leaves every socket open, says so once, and the checks go on."""
    monkeypatch.setattr(socket_logins, "CHECK_EVERY", FAST_CHECK)
    failures = 3

    def failing(logins: set[Login]) -> set[Login]:
        nonlocal failures
        if failures:
            failures -= 1
            raise RuntimeError("a fault in the check")
        return logins_holding(logins)

    monkeypatch.setattr(socket_logins, "logins_holding", failing)
    browser = await _browser()
    socket = await _open(LIST, browser)
    await database_sync_to_async(_session_deleted)(browser)
    assert await _closed(socket, FAST_CHECK * 5 + AT_ONCE) == 4401
    assert failures == 0
    said = [r for r in caplog.records if r.name == socket_logins.__name__]
    assert [(r.levelname, r.getMessage()) for r in said] == [
        ("ERROR", "the sockets' sign-ins could not be checked")
    ]
    await socket.disconnect()
