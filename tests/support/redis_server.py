"""A Redis server of a test's own on a free port of 127.0.0.1 (Debian's ``redis-server``),
which the test stops and starts again: a restart as a team would see one, keeping nothing
(no dump, no append-only file), without touching the Redis other tests use."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.support.server import free_port, terminate

READY_TIMEOUT = 10.0


class RedisServer:
    def __init__(self, folder: Path) -> None:
        found = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.program = found
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        log = self.folder / "redis.log"
        command = [self.program, "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.folder)]
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 1) as probe:
                    probe.sendall(b"PING\r\n")
                    if probe.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer on {self.port}:\n{log.read_text()}")

    def stop(self) -> None:
        process, self.process = self.process, None
        terminate(process)

    def restart(self, down: float = 1.0) -> None:
        """Stop, stay down ``down`` seconds, start again on the same port, empty."""
        self.stop()
        time.sleep(down)
        self.start()
