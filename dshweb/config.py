"""dshweb's own settings: one ``DSHWEB`` dict in Django's settings, read through
:func:`get_config`.

``settings.py`` fills ``DSHWEB`` from the environment once, at import (docs/configuration.md;
the table), checking each variable; nothing else reads the environment. A key left out
takes its default in :data:`DEFAULTS`; an unknown key or a value of the wrong type or shape
is refused with a :class:`~dshweb.setting_errors.ConfigurationError` naming the key
(``DSHWEB['PRICE_AS']``), so a typo is never silently ignored.
:func:`get_config` is cached and forgotten on ``setting_changed``: a test changes a setting
with ``override_settings(DSHWEB={**settings.DSHWEB, "PROFILE": "x"})`` (or pytest-django's
``settings`` fixture) and nothing else. Reading the settings touches no file.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from dshweb import secret_key
from dshweb.core.fold.cost import RateBook, rate_book
from dshweb.core.fold.cost_settings import DEFAULT_PRICE_AS
from dshweb.core.listing.homes import DEFAULT_HOME_NAME, home_name_problem
from dshweb.environment import (
    DEFAULT_HSTS_SECONDS,
    DEFAULT_PROFILE,
    DEFAULT_WEBHOOK_RULES_PER_USER,
    data_dir,
)
from dshweb.environment_otlp import OtlpTarget
from dshweb.environment_server import proxy_addresses
from dshweb.setting_errors import ConfigurationError

T = TypeVar("T")

DEFAULTS: Mapping[str, object] = {
    "DATA_DIR": data_dir({}),
    "SECRET_KEY_FILE": True,
    "DSH_HOME": "~/.dsh",
    "DEMO": True,
    "PROFILE": DEFAULT_PROFILE,
    "FOLD_CHECKPOINTS": True,
    "FOLD_PROCESSES": 0,
    "COLLECT": True,
    "HOME_NAME": DEFAULT_HOME_NAME,
    "ENGINE_URL": "",
    "ENGINE": "",
    "LOGIN_THROTTLE_FAILURES": 5,
    "LOGIN_THROTTLE_SECONDS": 300,
    "LOGIN_THROTTLE_ADDRESS_FAILURES": 20,
    "BEHIND_TLS_PROXY": False,
    "TRUSTED_PROXIES": None,
    "TRUSTED_ORIGINS": (),
    "HSTS_SECONDS": DEFAULT_HSTS_SECONDS,
    "PUBLIC_URL": "",
    "METRICS_TOKEN": "",
    "WEBHOOK_ALLOWED_HOSTS": (),
    "MAIL_ALLOWED_DOMAINS": (),
    "WEBHOOK_RULES_PER_USER": DEFAULT_WEBHOOK_RULES_PER_USER,
    "PEAK_WINDOWS": "",
    "PRICE_AS": DEFAULT_PRICE_AS,
    "OTLP": OtlpTarget(),
}
"""Every key of ``DSHWEB`` and its default (see :class:`DshwebConfig` for each meaning)."""


@dataclass(frozen=True, slots=True)
class DshwebConfig:
    data_dir: Path
    """``DATA_DIR``: the database, the secret key, the demo home; private to its owner.
    ``settings.py`` derives ``DATABASES``, ``STATIC_ROOT`` and ``SECRET_KEY`` from it at
    import, so a later override moves only the demo home and what bootstrap prepares."""
    secret_key_file: bool
    """``SECRET_KEY_FILE``: the secret key is kept in ``DATA_DIR/secret_key`` (made by
    ``manage.py dshweb_bootstrap``, read by ``settings.py``); off when
    ``DSHWEB_SECRET_KEY`` gives the key."""
    dsh_home: Path
    """``DSH_HOME``: the DSH home to watch."""
    demo: bool
    """``DEMO``: when ``DSH_HOME`` does not exist, show a copy of the bundled demo home
    (``DATA_DIR/demo-home``, made on first use) instead."""
    profile: str
    """``PROFILE``: the DSH profile whose compaction settings give the compaction point."""
    fold_checkpoints: bool
    """``FOLD_CHECKPOINTS``: the hub keeps each session's fold state in the database."""
    fold_processes: int
    """``FOLD_PROCESSES``: how many processes a cold read of a big home is spread over
    (:mod:`dshweb.core.fold.spread`); 0, the default: every core this process may use;
    1: this process alone."""
    collect: bool
    """``COLLECT``: this process runs the hub of ``DSH_HOME`` (the embedded default). Off:
    a web worker, which never reads a DSH home and shows what collectors
    (``manage.py dshweb_collect``) wrote to the database (:mod:`dshweb.collect.worker`)."""
    home_name: str
    """``HOME_NAME``: the name of the home this process collects (``COLLECT`` on): pages
    and addresses name each session's home (:mod:`dshweb.core.listing.homes`)."""
    engine_url: str
    """``ENGINE_URL``: launch URL of a running ``dsh web`` for the Compact button (it wins
    over the engine stored in the database)."""
    engine: str
    """``ENGINE``: ``managed`` runs ``dsh --profile web`` for the Compact button."""
    login_throttle_failures: int
    """``LOGIN_THROTTLE_FAILURES``: failed sign-ins of one username from one address, each
    within the cool-off of the one before, after which that pair is refused."""
    login_throttle_seconds: int
    """``LOGIN_THROTTLE_SECONDS``: the cool-off."""
    login_throttle_address_failures: int
    """``LOGIN_THROTTLE_ADDRESS_FAILURES``: failed sign-ins from one address, whatever the
    usernames, each within the cool-off of the one before, after which that address is
    refused (spraying usernames is not free)."""
    behind_tls_proxy: bool
    """``BEHIND_TLS_PROXY``: a proxy on this host terminates TLS. This and the next two are
    turned into Django's security settings by ``settings.py`` itself, at import."""
    trusted_proxies: frozenset[str]
    """``TRUSTED_PROXIES``: addresses of the reverse proxies whose ``X-Forwarded-For``
    names the client (:mod:`dshweb.site.forwarded`); ``None`` (the default): the loopback
    addresses behind a TLS proxy, none otherwise."""
    trusted_origins: tuple[str, ...]
    """``TRUSTED_ORIGINS``: origins besides the server's own that may post forms."""
    hsts_seconds: int
    """``HSTS_SECONDS``: HSTS max-age behind the proxy (0: none)."""
    public_url: str
    """``PUBLIC_URL``: the address people open the dashboard at (``https://dsh.example``),
    for the links in alert webhooks and emails; empty: they carry the page's path only."""
    metrics_token: str
    """``METRICS_TOKEN``: the bearer token a Prometheus scrape of ``/metrics`` sends (a
    personal API token works too); empty: only personal tokens."""
    webhook_allowed_hosts: frozenset[str]
    """``WEBHOOK_ALLOWED_HOSTS``: hosts (as written in a URL) an alert webhook may name
    although they resolve to internal addresses; every other must resolve to public ones."""
    mail_allowed_domains: frozenset[str]
    """``MAIL_ALLOWED_DOMAINS``: domains an alert rule may mail besides its owner's own
    address."""
    webhook_rules_per_user: int
    """``WEBHOOK_RULES_PER_USER``: the most alert rules with a webhook one user may have,
    staff included (0: none); checked when a rule is saved in the browser."""
    otlp: OtlpTarget
    """``OTLP``: where the OpenTelemetry export sends (its metrics' and traces' URLs), how
    often the live sessions' figures go out, and whether this process exports its home
    live (:mod:`dshweb.environment_otlp` reads it from ``DSHWEB_OTLP`` and the standard
    ``OTEL_*`` variables; ``dshweb export-otlp`` sends there whether or not)."""
    rate_book: RateBook
    """``PEAK_WINDOWS`` (``01:00-04:00,06:00-10:00``: the UTC hours billed at the peak
    rate, in quarter hours; empty: the registry's own) and ``PRICE_AS``
    (``deepseek-flash=deepseek-v4-flash,…``: models the ``dsh-llm-cost`` registry does not
    know, rated as one it does; the pages say so), read into the rates costs go by."""

    @property
    def secret_key_path(self) -> Path | None:
        return self.data_dir / secret_key.FILE_NAME if self.secret_key_file else None


@functools.cache
def get_config() -> DshwebConfig:
    """``settings.DSHWEB`` over :data:`DEFAULTS`, checked and typed (cached)."""
    given: Mapping[str, object] = getattr(settings, "DSHWEB", {})
    if unknown := sorted(set(given) - set(DEFAULTS)):
        raise ConfigurationError(
            "DSHWEB", f"unknown key {', '.join(unknown)}; the keys are {', '.join(DEFAULTS)}"
        )
    value = {**DEFAULTS, **given}
    return DshwebConfig(
        data_dir=_path(value, "DATA_DIR"),
        secret_key_file=_typed(value, "SECRET_KEY_FILE", bool),
        dsh_home=_path(value, "DSH_HOME").expanduser(),
        demo=_typed(value, "DEMO", bool),
        profile=_typed(value, "PROFILE", str),
        fold_checkpoints=_typed(value, "FOLD_CHECKPOINTS", bool),
        fold_processes=_typed(value, "FOLD_PROCESSES", int),
        collect=_typed(value, "COLLECT", bool),
        home_name=_home_name(value),
        engine_url=_typed(value, "ENGINE_URL", str),
        engine=_typed(value, "ENGINE", str),
        login_throttle_failures=_typed(value, "LOGIN_THROTTLE_FAILURES", int),
        login_throttle_seconds=_typed(value, "LOGIN_THROTTLE_SECONDS", int),
        login_throttle_address_failures=_typed(value, "LOGIN_THROTTLE_ADDRESS_FAILURES", int),
        behind_tls_proxy=_typed(value, "BEHIND_TLS_PROXY", bool),
        trusted_proxies=_proxies(value),
        trusted_origins=_origins(value),
        hsts_seconds=_typed(value, "HSTS_SECONDS", int),
        public_url=_typed(value, "PUBLIC_URL", str).rstrip("/"),
        metrics_token=_typed(value, "METRICS_TOKEN", str),
        webhook_allowed_hosts=_url_hosts(_strings(value, "WEBHOOK_ALLOWED_HOSTS")),
        mail_allowed_domains=frozenset(
            d.strip().lower() for d in _strings(value, "MAIL_ALLOWED_DOMAINS") if d.strip()
        ),
        webhook_rules_per_user=_at_least_zero(value, "WEBHOOK_RULES_PER_USER"),
        otlp=_otlp(value),
        rate_book=_rate_book(value),
    )


@receiver(setting_changed, dispatch_uid="dshweb-config")
def _forget_config(*, setting: str, **kwargs: Any) -> None:
    if setting == "DSHWEB":
        get_config.cache_clear()


def _rate_book(value: Mapping[str, object]) -> RateBook:
    windows, aliases = _typed(value, "PEAK_WINDOWS", str), _typed(value, "PRICE_AS", str)
    try:
        return rate_book(windows, aliases, ("DSHWEB['PEAK_WINDOWS']", "DSHWEB['PRICE_AS']"))
    except ValueError as exc:
        setting, _, problem = str(exc).partition(": ")
        raise ConfigurationError(setting, problem) from None


def _otlp(value: Mapping[str, object]) -> OtlpTarget:
    item = value["OTLP"]
    if not isinstance(item, OtlpTarget):
        raise ConfigurationError("DSHWEB['OTLP']", f"{item!r} is not an OtlpTarget")
    return item


def _home_name(value: Mapping[str, object]) -> str:
    name = _typed(value, "HOME_NAME", str)
    if (problem := home_name_problem(name)) is not None:
        raise ConfigurationError("DSHWEB['HOME_NAME']", problem)
    return name


def _at_least_zero(value: Mapping[str, object], key: str) -> int:
    item = _typed(value, key, int)
    if item < 0 or isinstance(item, bool):
        raise ConfigurationError(f"DSHWEB[{key!r}]", f"{item!r} is not a count (0 or more)")
    return item


def _path(value: Mapping[str, object], key: str) -> Path:
    item = value[key]
    if not isinstance(item, str | os.PathLike):
        raise ConfigurationError(f"DSHWEB[{key!r}]", f"{item!r} is not a path")
    return Path(item)


def _typed(value: Mapping[str, object], key: str, kind: type[T]) -> T:
    item = value[key]
    if not isinstance(item, kind):
        raise ConfigurationError(f"DSHWEB[{key!r}]", f"{item!r} is not a {kind.__name__}")
    return item


def _strings(value: Mapping[str, object], key: str) -> tuple[str, ...]:
    item = value[key]
    if isinstance(item, str):
        item = item.split(",")
    if not isinstance(item, tuple | list) or not all(isinstance(o, str) for o in item):
        raise ConfigurationError(f"DSHWEB[{key!r}]", f"{item!r} is not a list of names")
    return tuple(str(o) for o in item)


LOOPBACK = frozenset({"127.0.0.1", "::1"})
"""Where the proxies of docs/https.md connect from: the default ``TRUSTED_PROXIES`` behind one."""


def _proxies(value: Mapping[str, object]) -> frozenset[str]:
    if value["TRUSTED_PROXIES"] is None:
        return LOOPBACK if value["BEHIND_TLS_PROXY"] else frozenset()
    return proxy_addresses(_strings(value, "TRUSTED_PROXIES"), "DSHWEB['TRUSTED_PROXIES']")


def _origins(value: Mapping[str, object]) -> tuple[str, ...]:
    item = value["TRUSTED_ORIGINS"]
    if not isinstance(item, tuple | list) or not all(isinstance(o, str) for o in item):
        raise ConfigurationError("DSHWEB['TRUSTED_ORIGINS']", f"{item!r} is not a list of origins")
    return tuple(str(o) for o in item)


def _url_hosts(raw: Iterable[str]) -> frozenset[str]:
    """Host names as written in a URL (``127.0.0.1``, ``[::1]``, ``relay.internal``), in
    the form a URL's ``hostname`` has them (:func:`dshweb.alerts.webhooks.webhook_target`
    compares that)."""
    return frozenset(h.strip().strip("[]").lower() for h in raw if h.strip())
