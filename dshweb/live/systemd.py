"""What a service tells systemd (the ``sd_notify`` protocol), without a library: one
datagram to the socket ``$NOTIFY_SOCKET`` names per message.

The units of ``deploy/`` are ``Type=notify`` with a ``WatchdogSec=``: systemd counts a
unit started once it is sent ``READY=1``, and restarts it when ``WATCHDOG=1`` stops
coming for the watchdog's time. :class:`ServiceNotifier` sends ``READY=1`` once the
process is first ready (:mod:`dshweb.live.readiness`), a ``STATUS=`` line whenever what it
waits for changes (``systemctl status`` shows it), ``EXTEND_TIMEOUT_USEC=`` while the first
round of a big home goes on (systemd does not give up on a start that is at work), and
``WATCHDOG=1`` every half watchdog interval while the process is alive: pinged from the
server's event loop (:mod:`dshweb.live.startup`) or a collector's loop, and only while
the hub is at work, so a loop or a hub that hangs is restarted. Without
``$NOTIFY_SOCKET`` (not started by systemd) it sends nothing. The status lines are for
an operator's ``systemctl status`` and journal, in English like the rest of the log.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping

from dshweb.live import timing

log = logging.getLogger(__name__)


def notify_address(environ: Mapping[str, str]) -> str | None:
    """The datagram socket ``$NOTIFY_SOCKET`` names: a path, or an abstract socket
    (``@name``, returned with its leading NUL); None when unset or of a kind not spoken
    here (``vsock:``)."""
    address = environ.get("NOTIFY_SOCKET", "")
    if address.startswith("@"):
        return "\0" + address[1:]
    if address.startswith("/"):
        return address
    return None


def send(address: str, message: str) -> None:
    """One notification datagram (``KEY=value`` lines) to ``address``; OSError if it
    cannot be sent."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as out:
        out.connect(address)
        out.sendall(message.encode())


def watchdog_seconds(environ: Mapping[str, str], pid: int) -> float | None:
    """The watchdog's time systemd set for this process (``$WATCHDOG_USEC``, when
    ``$WATCHDOG_PID`` is unset or names ``pid``), in seconds; None: no watchdog."""
    try:
        usec = int(environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0 or environ.get("WATCHDOG_PID", str(pid)) != str(pid):
        return None
    return usec / 1e6


class ServiceNotifier:
    """What a process tells systemd as it starts and runs: call :meth:`tick` at least
    every :attr:`every` seconds with what is known then."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        pid: int | None = None,
    ) -> None:
        environ = os.environ if environ is None else environ
        self.address = notify_address(environ)
        self.watchdog = watchdog_seconds(environ, os.getpid() if pid is None else pid)
        self.clock = clock
        self.ready = False
        """``READY=1`` was sent."""
        self._status = ""
        self._next_ping = 0.0
        self._next_extend = 0.0
        self._failing = False

    @property
    def enabled(self) -> bool:
        """Started by systemd with a socket to notify."""
        return self.address is not None

    @property
    def every(self) -> float:
        """How often :meth:`tick` needs calling: until ready, every
        :data:`~dshweb.live.timing.READY_LOOKED_AT` (READY=1 soon after readiness holds);
        then a quarter of the watchdog's time (a ping every half of it however late a
        tick comes), at most every second."""
        if not self.ready:
            return timing.READY_LOOKED_AT
        return min(1.0, self.watchdog / 4) if self.watchdog else 1.0

    def tick(self, *, not_ready: str | None, alive: bool, starting: bool = False) -> list[str]:
        """Tell systemd what is due: ``READY=1`` the first time ``not_ready`` is None,
        before that a ``STATUS=`` line when the reason changes, and ``EXTEND_TIMEOUT_USEC=``
        while ``starting`` (the home's first round at work) and ``alive``; ``WATCHDOG=1``
        when its half interval has passed and ``alive``. The lines sent (none: nothing
        due, or no socket)."""
        if self.address is None:
            return []
        now = self.clock()
        lines: list[str] = []
        if not self.ready:
            if not_ready is None:
                self.ready = True
                lines += ["READY=1", "STATUS=ready"]
            else:
                if not_ready != self._status:
                    self._status = not_ready
                    lines.append(f"STATUS=not ready: {not_ready}")
                if starting and alive and now >= self._next_extend:
                    lines.append(f"EXTEND_TIMEOUT_USEC={int(timing.START_EXTENDED_BY * 1e6)}")
                    self._next_extend = now + timing.START_EXTENDED_BY / 3
        if self.watchdog is not None and alive and now >= self._next_ping:
            lines.append("WATCHDOG=1")
            self._next_ping = now + self.watchdog / 2
        if lines:
            self._send("\n".join(lines))
        return lines

    def _send(self, message: str) -> None:
        assert self.address is not None
        try:
            send(self.address, message)
        except OSError as error:
            if not self._failing:  # once, until a send works again
                log.warning("cannot notify systemd at $NOTIFY_SOCKET: %s", error)
            self._failing = True
            return
        self._failing = False
