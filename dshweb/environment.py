"""What the environment configures, read without Django: ``settings.py`` reads it once
into its ``DSHWEB`` dict (:mod:`dshweb.config`), and the CLI, which starts no Django, reads
it here too. Nothing here touches a file but :func:`home_choice`, called on first use.

``DSHWEB_DATA_DIR`` (default ``var/`` in the checkout) holds the database, the secret key
and the demo home; the DSH home is ``$DSH_HOME`` (else ``~/.dsh``) or, when that does
not exist and ``DSHWEB_NO_DEMO`` is not ``1``, a writable copy of the bundled demo home.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from dshweb.core.log.home import dsh_home

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_PROFILE = "sdk"


def data_dir() -> Path:
    return Path(os.environ.get("DSHWEB_DATA_DIR") or BASE_DIR / "var")


@dataclass(frozen=True, slots=True)
class HomeChoice:
    path: Path
    is_demo: bool


def configured_home() -> Path:
    """``$DSH_HOME``, else ``~/.dsh`` (an empty value counts as unset, as in DSH)."""
    return dsh_home()


def demo_allowed() -> bool:
    """``DSHWEB_NO_DEMO`` is not ``1``: a missing DSH home shows the demo home instead."""
    return os.environ.get("DSHWEB_NO_DEMO") != "1"


def home_choice(configured: Path, *, demo: bool, data_dir: Path) -> HomeChoice:
    """The DSH home to show: ``configured``, or when it does not exist and ``demo`` is on,
    a writable copy of the bundled demo home in ``data_dir`` (the data folder made private
    and the copy made now, when missing: call this on first use, never at import)."""
    if not demo or configured.exists():
        return HomeChoice(configured, False)
    from dshweb.live.demo import ensure_demo_home
    from dshweb.private_data import make_private

    make_private(data_dir)
    return HomeChoice(ensure_demo_home(data_dir / "demo-home"), True)


def profile() -> str:
    return os.environ.get("DSHWEB_PROFILE") or DEFAULT_PROFILE


# Behind HTTPS and a reverse proxy (README "Behind HTTPS"): settings.py turns these into
# Django's CSRF_TRUSTED_ORIGINS, SECURE_PROXY_SSL_HEADER, secure cookies, HSTS and redirect.

DEFAULT_HSTS_SECONDS = 365 * 24 * 3600


class ConfigurationError(ValueError):
    """An environment variable holds a value dshweb cannot use; the message says which."""


@dataclass(frozen=True, slots=True)
class HttpsSetup:
    behind_tls_proxy: bool
    """``DSHWEB_BEHIND_TLS_PROXY=1``: a proxy on this host terminates TLS."""
    trusted_origins: tuple[str, ...]
    """``DSHWEB_TRUSTED_ORIGINS``: ``scheme://host[:port]`` origins besides the server's own."""
    hsts_seconds: int
    """``DSHWEB_HSTS_SECONDS``: HSTS max-age sent behind the proxy (0: none)."""


def https_setup() -> HttpsSetup:
    return HttpsSetup(
        behind_tls_proxy=_switch("DSHWEB_BEHIND_TLS_PROXY"),
        trusted_origins=trusted_origins(os.environ.get("DSHWEB_TRUSTED_ORIGINS", "")),
        hsts_seconds=_seconds("DSHWEB_HSTS_SECONDS", DEFAULT_HSTS_SECONDS),
    )


def trusted_origins(value: str) -> tuple[str, ...]:
    """Comma-separated origins, each ``http(s)://host[:port]`` (Django's ``*.`` wildcard
    allowed); anything else is refused rather than silently never matching."""
    origins = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        origin = item.rstrip("/")
        if not _is_origin(origin):
            raise ConfigurationError(
                f"DSHWEB_TRUSTED_ORIGINS: {item!r} is not an origin; write it as "
                "scheme://host[:port], e.g. https://dsh.example.com"
            )
        origins.append(origin)
    return tuple(origins)


def _is_origin(text: str) -> bool:
    parts = urlsplit(text)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # not a number, or out of range
        return False
    extra = parts.path or parts.query or parts.fragment or parts.username or parts.password
    return port_ok and parts.scheme in ("http", "https") and bool(parts.hostname) and not extra


def fold_checkpoints() -> bool:
    """``DSHWEB_FOLD_CHECKPOINTS`` (default on): keep fold state in the database."""
    return os.environ.get("DSHWEB_FOLD_CHECKPOINTS", "") == "" or _switch("DSHWEB_FOLD_CHECKPOINTS")


def _switch(name: str) -> bool:
    # A security switch spelled "true" or "yes" must not silently mean off.
    value = os.environ.get(name, "")
    if value not in ("", "0", "1"):
        raise ConfigurationError(f"{name}: {value!r} is neither 1 (on) nor 0 (off)")
    return value == "1"


def _seconds(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    if not value:
        return default
    if not value.isascii() or not value.isdigit():
        raise ConfigurationError(f"{name}: {value!r} is not a whole number of seconds")
    return int(value)
