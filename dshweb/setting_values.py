"""The shapes a setting's value may have, checked before anything uses it: a host name as
Django compares it, an origin, a web address, a port, a mail address, a mail domain.

Each ``…_problem`` function returns why the value is not of its shape, in words that
follow the value in a message (``'x:80' is …``), or None when it is. Pure Python, no
Django: ``settings.py`` runs these while it is imported.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

_NAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,62}))*\.?")
"""A DNS name: ``dsh.example.com``, ``relay.internal``, ``localhost``."""


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def host_problem(host: str, *, django: bool = False) -> str | None:
    """Why ``host`` is not a host as written in a URL, without its port: ``127.0.0.1``,
    ``[::1]`` (or ``::1``), ``dsh.example.com``. ``django``: as Django's ``ALLOWED_HOSTS``
    compares it, where ``*`` and ``.example.com`` match many and an IPv6 address has its
    brackets."""
    if "://" in host or "/" in host:
        return "is a web address, not a host: write the host alone (dsh.example.com)"
    if host.startswith("[") and host.endswith("]"):
        return None if ":" in host and _is_ip(host[1:-1]) else "is not an IPv6 address"
    if _is_ip(host):
        if django and ":" in host:
            return f"is an IPv6 address without its brackets: write [{host}]"
        return None
    if ":" in host:
        return "has a port: write the host alone (its port is never compared)"
    if django and host == "*":
        return None
    name = host[1:] if django and host.startswith(".") else host
    return None if _NAME.fullmatch(name) else "is not a host name"


def is_origin(text: str) -> bool:
    """``scheme://host[:port]``, http or https, nothing after it."""
    return web_address_problem(text, path=False) is None


def web_address_problem(text: str, *, path: bool = True) -> str | None:
    """Why ``text`` is not ``http(s)://host[:port]`` (followed by a path when ``path``)."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # a port that is not a number or out of range, a broken [IPv6]
        return "is not a web address: its host or port cannot be read"
    if parts.scheme not in ("http", "https"):
        return "is not a web address: write it as https://host[:port]"
    if not parts.hostname or port == 0 or parts.username or parts.password:
        return "is not a web address: write it as https://host[:port]"
    if parts.query or parts.fragment or (parts.path and not path):
        return "has more than scheme://host[:port]" + ("/path" if path else "")
    return None


def port_problem(text: str) -> str | None:
    """Why ``text`` is not a TCP port (1 to 65535)."""
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        return "is not a port (1 to 65535)"
    return None


def mail_address_problem(text: str) -> str | None:
    """Why ``text`` is not one mail address (``dshweb@example.com``, ``dshweb
    <dshweb@example.com>``)."""
    from email.utils import parseaddr  # here: the email package is slow to import

    _name, address = parseaddr(text)
    local, at, domain = address.rpartition("@")
    if not at or not local or not domain or text.count("@") != 1 or "," in text:
        return "is not a mail address (dshweb@example.com)"
    return None


def mail_domain_problem(text: str) -> str | None:
    """Why ``text`` is not a mail domain (``example.com``)."""
    if "@" in text:
        return "is an address: write its domain alone (example.com)"
    if host_problem(text) is not None or ":" in text:
        return "is not a mail domain (example.com)"
    return None
