"""What the environment configures, read without Django: ``settings.py`` reads it once
into its ``DSHWEB`` dict (:mod:`dshweb.config`), and the CLI, which starts no Django, reads
it here too. Nothing here writes a file but :func:`home_choice`, called on first use.

``DSHWEB_DATA_DIR`` (default: ``var/`` in a checkout, else ``$XDG_DATA_HOME/dshweb``) holds
the database, the secret key and the demo home; the DSH home is ``$DSH_HOME`` (else
``~/.dsh``) or, when that does not exist and ``DSHWEB_NO_DEMO`` is not ``1``, a writable
copy of the bundled demo home.

Each reader checks its value and raises :class:`ConfigurationError` naming the variable
when dshweb cannot use it (:mod:`dshweb.setting_errors`); one that reads several
(:func:`https_setup`, :func:`stores`) names each refused. The server's own variables
(hosts, mail, engine, links) are read by :mod:`dshweb.environment_server`.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast
from urllib.parse import SplitResult, urlsplit

from dshweb.core.fold.cost_settings import DEFAULT_PRICE_AS, parse_aliases, parse_windows
from dshweb.core.listing.homes import DEFAULT_HOME_NAME, home_name_problem
from dshweb.core.log.home import dsh_home
from dshweb.demo.home import BUNDLED_HOME, ensure_demo_home
from dshweb.environment_server import switch
from dshweb.installed import add_extra
from dshweb.private_data import make_private
from dshweb.setting_errors import ConfigurationError as ConfigurationError  # every reader's
from dshweb.setting_errors import ConfigurationErrors as ConfigurationErrors
from dshweb.setting_errors import Reading
from dshweb.setting_values import is_origin

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_PROFILE = "sdk"


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$DSHWEB_DATA_DIR``; else ``var/`` of the checkout this code runs from; else, for an
    installed package, ``$XDG_DATA_HOME/dshweb`` (``~/.local/share/dshweb``)."""
    environ = os.environ if environ is None else environ
    if given := environ.get("DSHWEB_DATA_DIR"):
        return Path(given)
    if is_checkout():
        return BASE_DIR / "var"
    xdg = environ.get("XDG_DATA_HOME", "")
    # The XDG spec: a relative value is invalid and is ignored.
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "dshweb"


def is_checkout() -> bool:
    """This code runs from a checkout of dshweb (its ``manage.py`` beside the package), not
    from an installed package."""
    return (BASE_DIR / "manage.py").is_file() and (BASE_DIR / "pyproject.toml").is_file()


@dataclass(frozen=True, slots=True)
class HomeChoice:
    path: Path
    is_demo: bool


def configured_home() -> Path:
    """``$DSH_HOME``, else ``~/.dsh`` (an empty value counts as unset, as in DSH)."""
    return dsh_home()


def checked_home() -> Path:
    """:func:`configured_home`, refused when something other than a folder is there."""
    home = configured_home()
    try:
        is_folder = home.is_dir() or not home.exists()
    except OSError:  # a name too long, a folder above that cannot be searched
        is_folder = False
    if not is_folder:
        raise ConfigurationError(
            "DSH_HOME", f"{home} is not a folder", "name the folder DSH writes (default ~/.dsh)"
        )
    return home


def demo_allowed() -> bool:
    """``DSHWEB_NO_DEMO`` is not ``1``: a missing DSH home shows the demo home instead."""
    return not switch("DSHWEB_NO_DEMO")


def home_choice(
    configured: Path, *, demo: bool, data_dir: Path, prepare: bool = True
) -> HomeChoice:
    """The DSH home to show: ``configured``, or when it does not exist and ``demo`` is on,
    a writable copy of the bundled demo home in ``data_dir`` (the data folder made private
    and the copy made now, when missing: call this on first use, never at import).
    ``prepare=False`` makes nothing: the demo home is then the copy if there is one, else
    the bundled home itself (to read, never to write)."""
    if not demo or configured.exists():
        return HomeChoice(configured, False)
    copy = data_dir / "demo-home"
    if not prepare:
        return HomeChoice(copy if copy.is_dir() else BUNDLED_HOME, True)
    make_private(data_dir)
    return HomeChoice(ensure_demo_home(copy), True)


def demo_notice(configured: Path) -> str:
    """What ``serve`` and ``snapshot`` say when they show the demo home instead."""
    return (
        f"dshweb: no DSH home at {configured}: showing the bundled demo home "
        "(DSH_HOME names another home; DSHWEB_NO_DEMO=1 turns the demo off)"
    )


def profile() -> str:
    """``DSHWEB_PROFILE``: a profile's name, the name of one folder of the home's ``profiles/``."""
    name = os.environ.get("DSHWEB_PROFILE") or DEFAULT_PROFILE
    if "/" in name or "\\" in name or name in (".", ".."):
        raise ConfigurationError(
            "DSHWEB_PROFILE",
            f"{name!r} is not a profile name",
            "name one folder of the DSH home's profiles/ (sdk, web, …)",
        )
    return name


def peak_windows() -> str:
    """``DSHWEB_PEAK_WINDOWS``: the UTC peak billing windows costs go by (empty: the
    registry's; read by :mod:`dshweb.core.fold.cost`)."""
    return os.environ.get("DSHWEB_PEAK_WINDOWS", "")


def rate_as() -> str:
    """``DSHWEB_PRICE_AS``: models rated as another the registry knows (unset:
    :data:`~dshweb.core.fold.cost_settings.DEFAULT_PRICE_AS`; ``none``: none)."""
    return os.environ.get("DSHWEB_PRICE_AS", DEFAULT_PRICE_AS)


def rates() -> tuple[str, str]:
    """:func:`peak_windows` and :func:`rate_as`, each refused unless costs can go by it."""
    read = Reading()
    windows = read(lambda: _parsed("DSHWEB_PEAK_WINDOWS", peak_windows(), parse_windows), "")
    aliases = read(lambda: _parsed("DSHWEB_PRICE_AS", rate_as(), parse_aliases), "")
    read.done()
    return windows, aliases


def _parsed(name: str, value: str, parse: Callable[[str], object]) -> str:
    try:
        parse(value)
    except ValueError as error:
        raise ConfigurationError(name, str(error)) from None
    return value


# Behind HTTPS and a reverse proxy (docs/https.md): settings.py turns these into
# Django's CSRF_TRUSTED_ORIGINS, SECURE_PROXY_SSL_HEADER, secure cookies, HSTS and redirect.

DEFAULT_HSTS_SECONDS = 365 * 24 * 3600
DEFAULT_WEBHOOK_RULES_PER_USER = 10


@dataclass(frozen=True, slots=True)
class HttpsSetup:
    behind_tls_proxy: bool
    """``DSHWEB_BEHIND_TLS_PROXY=1``: a proxy on this host terminates TLS."""
    trusted_origins: tuple[str, ...]
    """``DSHWEB_TRUSTED_ORIGINS``: ``scheme://host[:port]`` origins besides the server's own."""
    hsts_seconds: int
    """``DSHWEB_HSTS_SECONDS``: HSTS max-age sent behind the proxy (0: none)."""


def https_setup() -> HttpsSetup:
    read = Reading()
    setup = HttpsSetup(
        behind_tls_proxy=read(lambda: switch("DSHWEB_BEHIND_TLS_PROXY"), False),
        trusted_origins=read(
            lambda: trusted_origins(os.environ.get("DSHWEB_TRUSTED_ORIGINS", "")), ()
        ),
        hsts_seconds=read(
            lambda: _whole("DSHWEB_HSTS_SECONDS", DEFAULT_HSTS_SECONDS, "seconds"),
            DEFAULT_HSTS_SECONDS,
        ),
    )
    read.done()
    return setup


def trusted_origins(value: str) -> tuple[str, ...]:
    """Comma-separated origins, each ``http(s)://host[:port]`` (Django's ``*.`` wildcard
    allowed); anything else is refused rather than silently never matching."""
    origins = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        origin = item.rstrip("/")
        if not is_origin(origin):
            raise ConfigurationError(
                "DSHWEB_TRUSTED_ORIGINS",
                f"{item!r} is not an origin",
                "write it as scheme://host[:port], e.g. https://dsh.example.com",
            )
        origins.append(origin)
    return tuple(origins)


# Stores past one process (docs/team.md): PostgreSQL for the database, Redis
# for the channel layer and the cache. Both optional; settings.py turns them into Django's
# DATABASES, CHANNEL_LAYERS and CACHES.

POSTGRES_SCHEMES = ("postgres", "postgresql", "pgsql")
REDIS_SCHEMES = ("redis", "rediss", "unix")
KEY_PREFIX = "dshweb"
"""Prefix of every key dshweb puts in a shared Redis (channel layer and cache)."""


@dataclass(frozen=True, slots=True)
class Stores:
    database_url: str
    """``DATABASE_URL``: a PostgreSQL database (``postgres://user:password@host:port/name``);
    empty: SQLite in the data folder."""
    redis_url: str
    """``DSHWEB_REDIS_URL``: a Redis (``redis://host:port/db``) for the channel layer and
    the cache; empty: both in this process's memory."""


def stores() -> Stores:
    """The stores the environment names, each checked (:func:`store`)."""
    read = Reading()
    found = Stores(
        database_url=read(lambda: store("DATABASE_URL"), ""),
        redis_url=read(lambda: store("DSHWEB_REDIS_URL"), ""),
    )
    read.done()
    return found


def store(name: str) -> str:
    """The URL of ``DATABASE_URL`` or ``DSHWEB_REDIS_URL``, checked, and what it needs
    installed; empty when unset."""
    database = name == "DATABASE_URL"
    given = (database_url if database else redis_url)(os.environ.get(name, ""))
    modules = TEAM_DATABASE_MODULES if database else TEAM_REDIS_MODULES
    if missing := [m for m in modules if given and importlib.util.find_spec(m) is None]:
        raise ConfigurationError(
            name,
            f"set, but {', '.join(missing)} is not installed",
            f"install dshweb with its team extra ({add_extra('team')}), or leave it unset",
        )
    return given


CONNECT_TIMEOUT = 5
"""Seconds a connection to PostgreSQL may take before it fails (unless the URL sets
``connect_timeout``): a host that drops packets or never answers fails a request, a start
or ``dshweb doctor`` in seconds, never hangs it."""
NO_DATABASE: dict[str, object] = {"ENGINE": "django.db.backends.dummy"}
"""The database of ``dshweb doctor`` when the one configured is refused: none at all."""
TEAM_DATABASE_MODULES = ("psycopg", "dj_database_url")
"""What ``DATABASE_URL`` needs: the ``team`` extra of the package (pyproject.toml)."""
TEAM_REDIS_MODULES = ("channels_redis", "redis")
"""What ``DSHWEB_REDIS_URL`` needs: the ``team`` extra too."""


def database_url(value: str) -> str:
    """``value`` when it names a PostgreSQL database (or is empty); refused otherwise."""
    value = value.strip()
    if not value:
        return ""
    parts = _url_parts("DATABASE_URL", value, "postgres://user:password@host:port/name")
    if parts.scheme not in POSTGRES_SCHEMES or not parts.path.strip("/"):
        scheme = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        name = "" if parts.path.strip("/") else " and no database name"
        raise ConfigurationError(
            "DATABASE_URL",
            "dshweb's shared database is PostgreSQL, written as "
            "postgres://user:password@host:port/name (leave it unset for the embedded SQLite); "
            f"this one has {scheme}{name}",
        )
    return value


def redis_url(value: str) -> str:
    """``value`` when it names a Redis (or is empty); refused otherwise."""
    value = value.strip()
    if not value:
        return ""
    parts = _url_parts("DSHWEB_REDIS_URL", value, "redis://host:port/db")
    if parts.scheme not in REDIS_SCHEMES:
        raise ConfigurationError(
            "DSHWEB_REDIS_URL",
            "write it as redis://host:port/db (rediss:// for TLS, unix:// for a socket)",
            "leave it unset for the in-process channel layer",
        )
    db = parts.path.strip("/")
    if parts.scheme != "unix" and db and not (db.isascii() and db.isdigit()):
        raise ConfigurationError(
            "DSHWEB_REDIS_URL",
            f"the database {db!r} is not a number",
            "write it as redis://host:port/db, db a number (0 to 15 by default)",
        )
    return value


def _url_parts(name: str, value: str, shape: str) -> SplitResult:
    """``value`` split, its host and port readable; the message never shows a password."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises on a port that is not a number or out of range)
    except ValueError as error:
        raise ConfigurationError(
            name, f"not a URL dshweb can read ({error})", f"write it as {shape}"
        ) from None
    return parts


def database_settings(stores: Stores, data_dir: Path) -> dict[str, object]:
    """Django's ``DATABASES["default"]`` for ``stores``."""
    if stores.database_url:
        import dj_database_url

        # Connections are opened per request or task and health-checked when reused, so a
        # restarted PostgreSQL costs one failed request, not a broken worker.
        try:
            database = dict(dj_database_url.parse(stores.database_url, conn_health_checks=True))
        except ValueError as error:
            raise ConfigurationError(
                "DATABASE_URL",
                f"not a URL dshweb can read ({error})",
                "write it as postgres://user:password@host:port/name",
            ) from None
        # A host that never answers fails the connection in seconds, not never.
        options = dict(cast(Mapping[str, object], database.get("OPTIONS") or {}))
        options.setdefault("connect_timeout", CONNECT_TIMEOUT)
        return database | {"OPTIONS": options}
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": data_dir / "db.sqlite3",
        # Writers queue instead of failing: every transaction takes the write lock when it
        # begins (a deferred one upgrading under another writer fails at once with
        # "database is locked"), and waits up to 20 s for it.
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
    }


def channel_layer_settings(stores: Stores) -> dict[str, object]:
    """Django Channels' ``CHANNEL_LAYERS["default"]`` for ``stores``."""
    if stores.redis_url:
        return {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout by default, which tears down every
            # idle socket's blocking receive (django/channels_redis#422): no read timeout.
            "CONFIG": {
                "hosts": [{"address": stores.redis_url, "socket_timeout": None}],
                "prefix": KEY_PREFIX,
            },
        }
    return {"BACKEND": "channels.layers.InMemoryChannelLayer"}


def cache_settings(stores: Stores) -> dict[str, object]:
    """Django's ``CACHES["default"]`` (the sign-in throttle's counts) for ``stores``: shared
    by every process on Redis, else this process's memory."""
    if stores.redis_url:
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": stores.redis_url,
            "KEY_PREFIX": KEY_PREFIX,
        }
    return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}


def fold_checkpoints() -> bool:
    """``DSHWEB_FOLD_CHECKPOINTS`` (default on): keep fold state in the database."""
    return os.environ.get("DSHWEB_FOLD_CHECKPOINTS", "") == "" or switch("DSHWEB_FOLD_CHECKPOINTS")


def fold_processes() -> int:
    """``DSHWEB_FOLD_PROCESSES`` (default 0: every core this process may use): how many
    processes a cold read of a big home is spread over; 1 folds in this process alone."""
    return _whole("DSHWEB_FOLD_PROCESSES", 0, "processes")


def collect() -> bool:
    """``DSHWEB_COLLECT`` (``on``, the default, or ``off``): this process folds the DSH
    home itself; ``off`` makes it a web worker that serves what collectors wrote to the
    database (docs/team.md, "Collectors") and never reads a DSH home."""
    value = os.environ.get("DSHWEB_COLLECT", "").strip()
    if value not in ("", "on", "off"):
        raise ConfigurationError(
            "DSHWEB_COLLECT",
            f"{value!r} is neither on (this process reads the DSH home) nor "
            "off (a web worker: it shows what collectors wrote to the database)",
        )
    return value != "off"


def home_name() -> str:
    """``DSHWEB_HOME_NAME``: the name of the home this process collects itself (the
    embedded server's; default ``local``); refused unless it can name a home."""
    value = os.environ.get("DSHWEB_HOME_NAME", "").strip() or DEFAULT_HOME_NAME
    if (problem := home_name_problem(value)) is not None:
        raise ConfigurationError("DSHWEB_HOME_NAME", problem)
    return value


def webhook_rules_per_user() -> int:
    """``DSHWEB_WEBHOOK_RULES_PER_USER`` (default 10): the most alert rules with a webhook
    one user may have (0: none)."""
    return _whole("DSHWEB_WEBHOOK_RULES_PER_USER", DEFAULT_WEBHOOK_RULES_PER_USER, "rules")


def _whole(name: str, default: int, unit: str) -> int:
    """The whole number (0 or more) of ``unit`` in variable ``name``; ``default`` unset."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isascii() or not value.isdigit():
        raise ConfigurationError(name, f"{value!r} is not a whole number of {unit}")
    return int(value)
