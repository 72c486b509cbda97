"""The reverse-proxy examples of docs/https.md, run as they are written.

:func:`readme_block` takes the docs' one fenced block of a language (``nginx``,
``caddyfile``). :class:`Nginx` and :class:`Caddy` run it in front of a dshweb server,
changing only what a test must: the addresses (dshweb's port; HTTPS and plain HTTP on
127.0.0.1 and free ports) and the certificate (one made for the test). Each substitution
must match exactly once, else :class:`ExampleChanged`: a docs example the test cannot
read is a broken test, never a silently different one. Around the block goes only what
the program needs to run in the foreground as the test's user, every file of it in the
test's folder; its output is kept for failure messages.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import ssl
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tests.conftest import REPO
from tests.support.server import HOST, Process, free_port, spawn, terminate

README = REPO / "docs" / "https.md"
READY_TIMEOUT = 15.0


class ProxyError(Exception):
    """The proxy is missing, or did not start listening in time."""


class ExampleChanged(ProxyError):
    """The docs' example no longer has the shape the test substitutes into."""


def readme_block(language: str, readme: Path | None = None) -> str:
    """The body of the docs' only fenced block opened with ```` ```language ````."""
    readme = readme or README
    blocks = re.findall(rf"^```{re.escape(language)}\n(.*?)^```$", readme.read_text(), re.S | re.M)
    if len(blocks) != 1:
        raise ExampleChanged(f"{readme} has {len(blocks)} ```{language} blocks, not one")
    return str(blocks[0])


def replace_once(text: str, pattern: str, replacement: str, *, example: str) -> str:
    """``text`` with the one match of ``pattern`` (multi-line) replaced, taken literally."""
    replaced, count = re.subn(pattern, lambda _: replacement, text, flags=re.M)
    if count != 1:
        raise ExampleChanged(
            f"the docs' {example} example: {count} matches of {pattern!r}, "
            "expected exactly one (change the example or tests/support/docs_proxies.py)"
        )
    return replaced


@dataclass(slots=True)
class ReverseProxy(ABC):
    """A proxy in a child process: HTTPS on ``tls_port``, plain HTTP on ``http_port``."""

    folder: Path
    upstream_port: int
    cert: Path
    key: Path
    tls_port: int = field(default_factory=free_port)
    http_port: int = field(default_factory=free_port)
    process: Process | None = None

    name: ClassVar[str]
    package: ClassVar[str]
    """The Debian package that has it (``scripts/test`` installs it)."""

    @property
    def origin(self) -> str:
        return f"https://{HOST}:{self.tls_port}"

    @property
    def log_path(self) -> Path:
        return self.folder / f"{self.name}.out"

    @classmethod
    def program(cls) -> str:
        found = shutil.which(cls.name, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
        if found is None:
            raise ProxyError(
                f"no `{cls.name}` on PATH: install it (Debian: apt-get install {cls.package}; "
                f"scripts/test does as root) or leave these tests out with -m 'not {cls.name}'"
            )
        return found

    @abstractmethod
    def config(self) -> str:
        """The whole configuration: the docs' block, substituted, in its wrapper."""

    @abstractmethod
    def command(self, config: Path) -> list[str]: ...

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def start(self) -> None:
        """Write the configuration, start the proxy and wait until both ports answer."""
        assert self.process is None, "already running"
        config = self.folder / f"{self.name}.conf"
        config.write_text(self.config())
        self.process = spawn(
            self.command(config), cwd=self.folder, env=self.env(), log=self.log_path
        )
        try:
            self._wait_listening()
        except BaseException:
            self.stop()
            raise

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        waiting = [self.tls_port, self.http_port]
        while waiting:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ProxyError(
                    f"{self.name} exited with {self.process.returncode}\n{self.output()}"
                )
            if time.monotonic() > deadline:
                raise ProxyError(f"{self.name} is not listening on {waiting}\n{self.output()}")
            try:
                socket.create_connection((HOST, waiting[0]), timeout=1).close()
                waiting.pop(0)
            except OSError:
                time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM (both exit at once on it), SIGKILL after a few seconds."""
        process, self.process = self.process, None
        terminate(process)

    def output(self) -> str:
        """What the proxy printed and logged, for a failure message."""
        parts = [self.log_path, *self.extra_logs()]
        text = "".join(
            f"--- {path}\n{path.read_text(errors='replace')}" for path in parts if path.exists()
        )
        return text + f"--- end of {self.name} output"

    def extra_logs(self) -> list[Path]:
        return []

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts only the test certificate (and checks it)."""
        return ssl.create_default_context(cafile=self.cert)


class Nginx(ReverseProxy):
    name = "nginx"
    package = "nginx"

    def config(self) -> str:
        block = readme_block("nginx")
        for pattern, replacement in [
            (r"\blisten\s+443\b", f"listen {HOST}:{self.tls_port}"),
            (r"\blisten\s+80\b", f"listen {HOST}:{self.http_port}"),
            (r"\bssl_certificate\s+[^;]+;", f'ssl_certificate "{self.cert}";'),
            (r"\bssl_certificate_key\s+[^;]+;", f'ssl_certificate_key "{self.key}";'),
            (r"\bproxy_pass\s+http://127\.0\.0\.1:8000\b", f"proxy_pass http://{HOST}:{self.upstream_port}"),
        ]:  # fmt: skip
            block = replace_once(block, pattern, replacement, example="nginx")
        temp_paths = "".join(
            f'    {kind}_temp_path "{self.folder / ("nginx-" + kind)}";\n'
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        # As root, nginx runs its workers as nobody, who may not enter the test's private
        # folders (where a large reply is buffered).
        user = "user root;\n" if os.geteuid() == 0 else ""
        return (
            f"# tests/support/docs_proxies.py: the docs' nginx example in what nginx needs to run\n"
            f'{user}worker_processes 1;\npid "{self.folder / "nginx.pid"}";\n'
            f'error_log "{self.folder / "error.log"}" notice;\n'
            f"events {{ worker_connections 64; }}\n"
            f'http {{\n    access_log "{self.folder / "access.log"}";\n{temp_paths}\n'
            f"{block}}}\n"
        )

    def command(self, config: Path) -> list[str]:
        return [
            self.program(),
            "-p", str(self.folder),
            "-c", str(config),
            "-e", str(self.folder / "error.log"),
            "-g", "daemon off; master_process on;",
        ]  # fmt: skip

    def extra_logs(self) -> list[Path]:
        return [self.folder / "error.log", self.folder / "access.log"]


class Caddy(ReverseProxy):
    name = "caddy"
    package = "caddy"

    def config(self) -> str:
        block = readme_block("caddyfile")
        # The site address: Caddy would fetch a certificate for the name; the test gives
        # it one for 127.0.0.1.
        block = replace_once(
            block,
            r"^[^\s{#]+\s*\{\s*$",
            f"https://{HOST}:{self.tls_port} {{\n\ttls {self.cert} {self.key}",
            example="Caddy",
        )
        block = replace_once(
            block,
            r"\breverse_proxy\s+127\.0\.0\.1:8000\b",
            f"reverse_proxy {HOST}:{self.upstream_port}",
            example="Caddy",
        )
        return (
            "# tests/support/docs_proxies.py: the docs' Caddy example, its address on loopback\n"
            f"{{\n\tadmin off\n\thttp_port {self.http_port}\n\tdefault_bind {HOST}\n}}\n\n"
            f"{block}"
        )

    def command(self, config: Path) -> list[str]:
        return [self.program(), "run", "--config", str(config), "--adapter", "caddyfile"]

    def env(self) -> dict[str, str]:
        # Caddy keeps its state (and an autosaved config) under these; the test's, not yours.
        return dict(os.environ) | {
            "HOME": str(self.folder),
            "XDG_CONFIG_HOME": str(self.folder / "caddy-config"),
            "XDG_DATA_HOME": str(self.folder / "caddy-data"),
        }
