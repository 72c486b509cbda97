"""Open sockets follow their sign-in on a real ``dshweb serve`` (a child process): a list
socket and a session socket of a browser close with 4401 within a second of the real
sign-out, or of an admin making their user inactive through the admin; and within the
check's period (:data:`~dshweb.accounts.socket_logins.CHECK_EVERY`) of a change another
process makes, which the server hears of from no signal (``dshweb user passwd``, the ORM
in a shell); and, in a team, within a second of a sign-out on another web worker (through
Redis)."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin

from dshweb.accounts.socket_logins import CHECK_EVERY
from tests.collect.test_shared_stores import worker_pair, workers
from tests.conftest import FIXTURE_HOMES
from tests.sessions.test_hostile_clients import manage_shell
from tests.support.server import DshwebServer, ServerError
from tests.support.visitor import Visitor, form_fields

__all__ = ["worker_pair", "workers"]  # the fixtures: two web workers on PostgreSQL and Redis

pytestmark = pytest.mark.timing  # each bounds how long a socket outlives its sign-in

PASSWORD = "sockets-follow-9Kq"
PEOPLE = ("alice", "bob", "carol", "dave")
SIGNAL_WITHIN = 1.5
"""A change the server hears of (its own signal): a few milliseconds, and a loaded
machine's slack."""
CHECK_WITHIN = CHECK_EVERY + 1.5
"""A change made by another process: the next check, and the same slack."""
PATHS = ("/ws/sessions/", "/ws/homes/local/sessions/auto-compact/")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    """``dshweb serve`` on a copy of a fixture home, with four users besides its admin."""
    folder = tmp_path_factory.mktemp("sockets-server")
    shutil.copytree(FIXTURE_HOMES / "auto-compact", folder / "home")
    made = DshwebServer(home=folder / "home", data_dir=folder / "data")
    made.as_dshweb_serve()
    try:
        made.prepare()
        manage_shell(
            made.env(),
            "from django.contrib.auth.models import User\n"
            f"for name in {PEOPLE!r}: User.objects.create_user(name, password={PASSWORD!r})",
        )
        made.start()
    except ServerError as error:
        pytest.fail(str(error), pytrace=False)
    yield made
    made.stop()


def _sockets(server: DshwebServer, visitor: Visitor, stack: ExitStack) -> list[ClientConnection]:
    """A list socket and a session socket of ``visitor``'s browser, each past its first
    message (closed with ``stack``)."""
    opened = []
    for path in PATHS:
        live = stack.enter_context(
            connect(
                f"ws://127.0.0.1:{server.port}{path}",
                origin=Origin(server.url),
                additional_headers={"Cookie": f"sessionid={visitor.cookies['sessionid']}"},
                open_timeout=30,
            )
        )
        live.recv(timeout=30)
        opened.append(live)
    return opened


def _closed(sockets: list[ClientConnection], started: float, within: float) -> list[float]:
    """Seconds from ``started`` until each socket closed with 4401 (updates before it are
    passed over); fails when one is still open ``within`` seconds after ``started``."""
    took = []
    for live in sockets:
        try:
            while True:
                left = started + within - time.monotonic()
                assert left > 0, f"still open {within} s later"
                live.recv(timeout=left)
        except TimeoutError:
            pytest.fail(f"{live.request.path if live.request else live}: open {within} s later")
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 4401, closed
            took.append(time.monotonic() - started)
    return took


def _still_open(sockets: list[ClientConnection], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    try:
        for live in sockets:
            while (left := deadline - time.monotonic()) > 0:
                live.recv(timeout=left)
    except TimeoutError:
        return True
    except ConnectionClosed:
        return False
    return True


def test_signing_out_closes_the_browsers_sockets_at_once(server: DshwebServer) -> None:
    visitor, elsewhere = Visitor(server, "alice", PASSWORD), Visitor(server, "alice", PASSWORD)
    with ExitStack() as stack:
        sockets, others = _sockets(server, visitor, stack), _sockets(server, elsewhere, stack)
        started = time.monotonic()
        status, page = visitor.post("/accounts/logout/")
        assert status == 200 and 'id="login"' in page  # redirected to the sign-in page
        took = _closed(sockets, started, SIGNAL_WITHIN)
        assert _still_open(others, 1.0), "the same user's other browser stays signed in"
    print(f"signed out: the sockets closed after {', '.join(f'{t:.3f}' for t in took)} s")


def test_an_admin_making_a_user_inactive_closes_their_sockets_at_once(
    server: DshwebServer,
) -> None:
    admin, bob = Visitor(server), Visitor(server, "bob", PASSWORD)
    users = admin.get("/admin/auth/user/?q=bob")[1]
    (change,) = set(re.findall(r'href="(/admin/auth/user/\d+/change/)[^"]*">bob<', users))
    fields = form_fields(admin.get(change)[1], "user_form")
    assert fields.pop("is_active") == "on"
    for many in ("groups", "user_permissions"):  # a browser sends no option of none chosen
        fields.pop(many, None)
    for button in ("_addanother", "_continue"):  # nor a button not pressed ("_save" is)
        fields.pop(button, None)
    with ExitStack() as stack:
        sockets = _sockets(server, bob, stack)
        started = time.monotonic()
        status, _, landed = admin.submit(change, fields)
        assert status == 200 and landed.endswith("/admin/auth/user/"), landed
        took = _closed(sockets, started, SIGNAL_WITHIN)
    print(f"made inactive in the admin: closed after {', '.join(f'{t:.3f}' for t in took)} s")


@pytest.mark.parametrize(
    ("person", "change"),
    [
        ("carol", ["dshweb_user", "passwd", "carol"]),
        (
            "dave",
            [
                "shell",
                "-c",
                "from django.contrib.auth.models import User\n"
                "user = User.objects.get(username='dave')\n"
                "user.is_active = False\n"
                "user.save()",
            ],
        ),
    ],
    ids=["dshweb-user-passwd", "orm-save-in-a-shell"],
)
def test_a_change_by_another_process_closes_the_sockets_at_the_next_check(
    server: DshwebServer, person: str, change: list[str]
) -> None:
    with ExitStack() as stack:
        sockets = _sockets(server, Visitor(server, person, PASSWORD), stack)
        started = time.monotonic()
        server.manage(*change)
        made = time.monotonic()
        took = _closed(sockets, made, CHECK_WITHIN)
    print(
        f"{change[0]} in another process ({made - started:.1f} s): closed "
        f"{', '.join(f'{t:.3f}' for t in took)} s after it returned"
    )


@pytest.mark.services
def test_signing_out_on_one_worker_closes_the_sockets_on_another_at_once(
    workers: tuple[DshwebServer, DshwebServer],
) -> None:
    """A team: the sign-out on worker A is told through Redis to the sockets on worker B."""
    a, b = workers
    visitor = Visitor(a)
    with ExitStack() as stack:
        sockets = _sockets(b, visitor, stack)
        started = time.monotonic()
        assert visitor.post("/accounts/logout/")[0] == 200
        took = _closed(sockets, started, SIGNAL_WITHIN)
    print(f"signed out on another worker: closed after {', '.join(f'{t:.3f}' for t in took)} s")
