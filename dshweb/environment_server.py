"""The variables of what the server answers and what it sends, each checked as it is
read (:mod:`dshweb.environment` has the data folder, the DSH home and the stores):

- ``DSHWEB_ALLOWED_HOSTS``, ``DSHWEB_DEBUG``, ``DSHWEB_SECRET_KEY``,
  ``DSHWEB_TIME_ZONE``: Django's own;
- ``DSHWEB_EMAIL_*``: the SMTP server alert emails go through, and their sender;
- ``DSHWEB_ENGINE``, ``DSHWEB_ENGINE_URL``, ``DSHWEB_PUBLIC_URL``,
  ``DSHWEB_METRICS_TOKEN``, ``DSHWEB_TRUSTED_PROXIES``, ``DSHWEB_WEBHOOK_ALLOWED_HOSTS``,
  ``DSHWEB_MAIL_ALLOWED_DOMAINS``: strings of the ``DSHWEB`` dict, which
  :func:`dshweb.config.get_config` reads into their types.

A value no one could mean (a host with a port where the port is never compared, a
launch URL that cannot be asked, a mail address that is none) is refused with a
:class:`~dshweb.setting_errors.ConfigurationError` rather than failing later, or never
matching, in silence. Read without Django.
"""

from __future__ import annotations

import ipaddress
import os
import zoneinfo
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from dshweb.dsh_web.launch_url import LaunchUrlError, parse_launch_url
from dshweb.setting_errors import ConfigurationError, Reading
from dshweb.setting_values import (
    host_problem,
    mail_address_problem,
    mail_domain_problem,
    port_problem,
    web_address_problem,
)

DEFAULT_ALLOWED_HOSTS = "127.0.0.1,localhost,[::1]"
ENGINES = ("", "managed")


def _get(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def _items(name: str, problem: Callable[[str], str | None], default: str = "") -> list[str]:
    """The comma-separated items of ``name``, each checked by ``problem``."""
    items = [item.strip() for item in _get(name, default).split(",") if item.strip()]
    for item in items:
        if (why := problem(item)) is not None:
            raise ConfigurationError(name, f"{item!r} {why}")
    return items


def switch(name: str) -> bool:
    """``name`` is ``1`` (on); ``0`` or unset: off; anything else is refused, so a switch
    spelled ``true`` or ``yes`` never silently means off."""
    value = _get(name)
    if value not in ("", "0", "1"):
        raise ConfigurationError(name, f"{value!r} is neither 1 (on) nor 0 (off)")
    return value == "1"


def allowed_hosts() -> list[str]:
    """``DSHWEB_ALLOWED_HOSTS``: the host names the server answers to, as Django compares
    them (no scheme, no port)."""
    return _items(
        "DSHWEB_ALLOWED_HOSTS",
        lambda host: host_problem(host, django=True),
        DEFAULT_ALLOWED_HOSTS,
    )


def secret_key() -> str:
    """``DSHWEB_SECRET_KEY`` (empty: none given, the data folder keeps one)."""
    value = _get("DSHWEB_SECRET_KEY")
    if value and not value.strip():
        raise ConfigurationError(
            "DSHWEB_SECRET_KEY",
            "holds only spaces",
            "give a long random key, or leave it unset (the data folder keeps one)",
        )
    return value


@dataclass(frozen=True, slots=True)
class Mail:
    """Django's ``EMAIL_*`` and ``DEFAULT_FROM_EMAIL`` settings."""

    host: str = "127.0.0.1"
    port: int = 25
    user: str = ""
    password: str = ""
    use_tls: bool = False
    sender: str = "dshweb@localhost"


def mail() -> Mail:
    """``DSHWEB_EMAIL_HOST``, ``_PORT``, ``_USER``, ``_PASSWORD``, ``_TLS`` and ``_FROM``."""
    read = Reading()
    default = Mail()
    found = Mail(
        host=read(lambda: _one("DSHWEB_EMAIL_HOST", default.host, host_problem), default.host),
        port=read(lambda: int(_one("DSHWEB_EMAIL_PORT", "25", port_problem)), default.port),
        user=_get("DSHWEB_EMAIL_USER"),
        password=_get("DSHWEB_EMAIL_PASSWORD"),
        use_tls=read(lambda: switch("DSHWEB_EMAIL_TLS"), False),
        sender=read(
            lambda: _one("DSHWEB_EMAIL_FROM", default.sender, mail_address_problem),
            default.sender,
        ),
    )
    read.done()
    return found


def _one(name: str, default: str, problem: Callable[[str], str | None]) -> str:
    value = _get(name, default).strip()
    if (why := problem(value)) is not None:
        raise ConfigurationError(name, f"{value!r} {why}")
    return value


def engine() -> str:
    """``DSHWEB_ENGINE``: ``managed``, or unset."""
    value = _get("DSHWEB_ENGINE").strip()
    if value not in ENGINES:
        raise ConfigurationError(
            "DSHWEB_ENGINE",
            f"{value!r} is not managed",
            "set managed (dshweb runs dsh --profile web itself), or leave it unset",
        )
    return value


def engine_url() -> str:
    """``DSHWEB_ENGINE_URL``: the launch URL ``dsh web`` printed, or unset."""
    value = _get("DSHWEB_ENGINE_URL").strip()
    if value:
        try:
            parse_launch_url(value)
        except LaunchUrlError as error:  # its message never shows the token
            raise ConfigurationError("DSHWEB_ENGINE_URL", str(error)) from None
    return value


def time_zone() -> str:
    """``DSHWEB_TIME_ZONE``: the IANA time zone the cost's days and weeks are in (and
    Django's ``TIME_ZONE``); unset: UTC."""
    value = _get("DSHWEB_TIME_ZONE").strip() or "UTC"
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigurationError(
            "DSHWEB_TIME_ZONE",
            f"{value!r} is not a time zone",
            "name one of the IANA database (Europe/Berlin, Asia/Shanghai, UTC)",
        ) from None
    return value


def public_url() -> str:
    """``DSHWEB_PUBLIC_URL``: ``https://host[:port][/path]``, or unset."""
    value = _get("DSHWEB_PUBLIC_URL").strip()
    if value and (why := web_address_problem(value)) is not None:
        raise ConfigurationError("DSHWEB_PUBLIC_URL", f"{value!r} {why}")
    return value


def metrics_token() -> str:
    """``DSHWEB_METRICS_TOKEN``: the bearer token a scrape of ``/metrics`` sends, or unset."""
    value = _get("DSHWEB_METRICS_TOKEN")
    if not all("!" <= char <= "~" for char in value):
        raise ConfigurationError(
            "DSHWEB_METRICS_TOKEN",
            "holds a space or a character an Authorization header cannot carry",
            "use visible ASCII only (a bearer token is one word)",
        )
    return value


def trusted_proxies() -> str | None:
    """``DSHWEB_TRUSTED_PROXIES``: comma-separated IP addresses; unset: None (the default
    of :mod:`dshweb.config`)."""
    value = _get("DSHWEB_TRUSTED_PROXIES")
    if not value:
        return None
    proxy_addresses(value.split(","), "DSHWEB_TRUSTED_PROXIES")
    return value


def proxy_addresses(items: Iterable[str], setting: str) -> frozenset[str]:
    """The IP addresses of ``items`` (blank ones skipped, ``[::1]`` as ``::1``)."""
    found = set()
    for item in (o.strip() for o in items):
        if not item:
            continue
        try:
            found.add(str(ipaddress.ip_address(item.strip("[]"))))
        except ValueError:
            raise ConfigurationError(setting, f"{item!r} is not an IP address") from None
    return frozenset(found)


def webhook_allowed_hosts() -> str:
    """``DSHWEB_WEBHOOK_ALLOWED_HOSTS``: hosts as written in a URL, comma-separated."""
    _items("DSHWEB_WEBHOOK_ALLOWED_HOSTS", host_problem)
    return _get("DSHWEB_WEBHOOK_ALLOWED_HOSTS")


def mail_allowed_domains() -> str:
    """``DSHWEB_MAIL_ALLOWED_DOMAINS``: mail domains, comma-separated."""
    _items("DSHWEB_MAIL_ALLOWED_DOMAINS", mail_domain_problem)
    return _get("DSHWEB_MAIL_ALLOWED_DOMAINS")
