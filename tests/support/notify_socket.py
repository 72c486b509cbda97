"""A datagram socket in systemd's place: what a process sends to ``$NOTIFY_SOCKET``
(``sd_notify``'s protocol: one datagram of ``KEY=value`` lines per message)."""

from __future__ import annotations

import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class NotifySocket:
    path: Path
    sock: socket.socket
    received: list[tuple[float, list[str]]] = field(default_factory=list)
    """Each datagram so far: when it came (monotonic) and its lines."""

    def env(self, *, watchdog_usec: int | None = None) -> dict[str, str]:
        """A child's environment as systemd sets it (``WATCHDOG_USEC``: a watchdog)."""
        env = {"NOTIFY_SOCKET": str(self.path)}
        if watchdog_usec is not None:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        return env

    def lines(self) -> list[str]:
        """Every line received so far, in order (what has come since is read first)."""
        self.sock.setblocking(False)
        while True:
            try:
                data = self.sock.recv(4096)
            except BlockingIOError:
                break
            self.received.append((time.monotonic(), data.decode().splitlines()))
        return [line for _, message in self.received for line in message]

    def wait_for(self, line: str, timeout: float, *, after: int = 0) -> int:
        """Until ``line`` (or a line starting with it, when it ends with ``=``) has come,
        past the first ``after`` lines; its index. AssertionError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.lines()
            for index in range(after, len(lines)):
                if lines[index] == line or (line.endswith("=") and lines[index].startswith(line)):
                    return index
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {line!r} within {timeout} s: {lines}")
            self.sock.settimeout(min(left, 0.2))
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            self.received.append((time.monotonic(), data.decode().splitlines()))


@contextmanager
def notify_socket() -> Iterator[NotifySocket]:
    """A bound datagram socket in a folder of its own, removed after (a short path: a
    socket's may hold 107 bytes, a test's ``tmp_path`` can be longer)."""
    folder = Path(tempfile.mkdtemp(prefix="dshweb-notify-"))
    path = folder / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    try:
        yield NotifySocket(path, sock)
    finally:
        sock.close()
        shutil.rmtree(folder, ignore_errors=True)
