"""What a process tells systemd (dshweb.live.systemd), received by a real datagram socket
standing for systemd's: READY=1 once, when readiness first holds; what it waits for
before; the start's timeout pushed on while the first round is at work; WATCHDOG=1 every
half watchdog interval, only while alive; nothing without $NOTIFY_SOCKET."""

from __future__ import annotations

import os
import socket
import uuid

import pytest

from dshweb.live import timing
from dshweb.live.systemd import ServiceNotifier, notify_address, watchdog_seconds
from tests.support.notify_socket import notify_socket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ready_once_after_what_it_waited_for_and_pings_only_while_alive() -> None:
    clock = Clock()
    with notify_socket() as systemd:
        notifier = ServiceNotifier(systemd.env(watchdog_usec=2_000_000), clock=clock)
        assert notifier.enabled and notifier.watchdog == 2.0
        assert notifier.every == timing.READY_LOOKED_AT  # until ready; then a quarter of 2 s
        waiting = "folding the home: 0 of 2 sessions read"
        notifier.tick(not_ready=waiting, alive=True, starting=True)
        assert systemd.lines() == [
            f"STATUS=not ready: {waiting}",
            f"EXTEND_TIMEOUT_USEC={int(timing.START_EXTENDED_BY * 1e6)}",
            "WATCHDOG=1",
        ]
        clock.now += 0.5  # the same reason, no ping due, no extension due: nothing sent
        notifier.tick(not_ready=waiting, alive=True, starting=True)
        assert len(systemd.lines()) == 3
        clock.now += 0.6  # past half the watchdog's time, but not alive: no ping
        notifier.tick(not_ready="the database does not answer", alive=False)
        assert systemd.lines()[3:] == ["STATUS=not ready: the database does not answer"]
        clock.now += 0.1
        notifier.tick(not_ready=None, alive=True)
        assert systemd.lines()[4:] == ["READY=1", "STATUS=ready", "WATCHDOG=1"]
        assert notifier.ready and notifier.every == 0.5
        for _ in range(4):  # ready stays said; a ping each second
            clock.now += 0.5
            notifier.tick(not_ready=None, alive=True)
        assert systemd.lines()[7:] == ["WATCHDOG=1", "WATCHDOG=1"]


def test_the_start_is_extended_again_every_third_of_the_extension() -> None:
    clock = Clock()
    with notify_socket() as systemd:
        notifier = ServiceNotifier(systemd.env(), clock=clock)
        for _ in range(6):  # over five sixths of it
            notifier.tick(not_ready="folding", alive=True, starting=True)
            clock.now += timing.START_EXTENDED_BY / 6
        extended = [line for line in systemd.lines() if line.startswith("EXTEND_TIMEOUT_USEC=")]
        assert len(extended) == 3  # at 0, a third and two thirds of it
        notifier.tick(not_ready="folding", alive=False, starting=True)  # a hub not at work
        clock.now += timing.START_EXTENDED_BY
        notifier.tick(not_ready="the database does not answer", alive=True, starting=False)
        assert [x for x in systemd.lines() if x.startswith("EXTEND")] == extended


def test_an_abstract_socket_is_reached_too() -> None:
    name = f"dshweb-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as systemd:
        systemd.bind("\0" + name)
        systemd.settimeout(5)
        notifier = ServiceNotifier({"NOTIFY_SOCKET": f"@{name}"})
        assert notifier.tick(not_ready=None, alive=True) == ["READY=1", "STATUS=ready"]
        assert systemd.recv(4096) == b"READY=1\nSTATUS=ready"


def test_without_a_socket_or_for_another_pid_nothing_is_said() -> None:
    notifier = ServiceNotifier({"WATCHDOG_USEC": "1000000"})
    assert not notifier.enabled
    assert notifier.tick(not_ready=None, alive=True) == []
    assert notify_address({"NOTIFY_SOCKET": "vsock:2:1234"}) is None
    pid = os.getpid()
    assert watchdog_seconds({"WATCHDOG_USEC": "3000000"}, pid) == 3.0
    assert watchdog_seconds({"WATCHDOG_USEC": "3000000", "WATCHDOG_PID": str(pid)}, pid) == 3.0
    assert watchdog_seconds({"WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "1"}, pid) is None
    assert watchdog_seconds({"WATCHDOG_USEC": "0"}, pid) is None
    assert watchdog_seconds({"WATCHDOG_USEC": "soon"}, pid) is None


def test_a_socket_that_is_gone_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    with notify_socket() as systemd:
        env = systemd.env()
    notifier = ServiceNotifier(env)  # its socket is closed and its file removed
    for _ in range(3):
        notifier.tick(not_ready="folding", alive=True)
        notifier._status = ""  # the same line due again
    said = [r for r in caplog.records if "cannot notify systemd" in r.getMessage()]
    assert len(said) == 1, caplog.text
