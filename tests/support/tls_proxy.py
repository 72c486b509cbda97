"""A TLS-terminating reverse proxy for tests: what nginx or Caddy does in front of dshweb.

It answers HTTPS on 127.0.0.1 with a self-signed certificate made for the test (for
``127.0.0.1`` and ``localhost``) and forwards each request to a plain-HTTP upstream on
127.0.0.1 with its original ``Host``, ``X-Forwarded-Proto: https`` and the client's
address in ``X-Forwarded-For``; the upstream's answer goes back as it is (redirects and
every ``Set-Cookie`` included). Plain HTTP requests only, no WebSocket upgrade.
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOST = "127.0.0.1"
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
     "upgrade", "content-length", "x-forwarded-for", "x-forwarded-proto"}
)  # fmt: skip


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, valid for a day, and its key (PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dshweb test proxy")])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.IPAddress(ipaddress.ip_address(HOST)), x509.DNSName("localhost")]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "proxy.crt", folder / "proxy.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream_port = 0

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def do_HEAD(self) -> None:
        self._forward()

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        upstream = http.client.HTTPConnection(HOST, self.upstream_port, timeout=30)
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for header, value in self.headers.items():  # Host among them, as the client sent it
                if header.lower() not in HOP_BY_HOP:
                    upstream.putheader(header, value)
            upstream.putheader("X-Forwarded-Proto", "https")
            upstream.putheader("X-Forwarded-For", self.client_address[0])
            upstream.putheader("Content-Length", str(len(body)))
            upstream.endheaders(body)
            reply = upstream.getresponse()
            data = reply.read()
        finally:
            upstream.close()
        self.send_response(reply.status, reply.reason)
        for header, value in reply.getheaders():
            if header.lower() not in HOP_BY_HOP:
                self.send_header(header, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass(slots=True)
class TlsProxy:
    upstream_port: int
    cert: Path
    key: Path
    server: ThreadingHTTPServer | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def tls_port(self) -> int:
        assert self.server is not None, "not started"
        return int(self.server.server_address[1])

    @property
    def origin(self) -> str:
        return f"https://{HOST}:{self.tls_port}"

    def start(self) -> None:
        handler = type("Forward", (_Forward,), {"upstream_port": self.upstream_port})
        server = ThreadingHTTPServer((HOST, 0), handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts only this proxy's certificate (and checks it)."""
        return ssl.create_default_context(cafile=self.cert)
