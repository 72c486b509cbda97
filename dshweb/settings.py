"""Django settings for dshweb.

Everything works with no configuration: SQLite and a generated secret key under
``DSHWEB_DATA_DIR``, an in-memory channel layer and cache (``DATABASE_URL`` and
``DSHWEB_REDIS_URL`` name PostgreSQL and Redis instead), loopback only, and the DSH home from
``DSH_HOME`` (else ``~/.dsh``), or a copy of the bundled demo home when that does not
exist. dshweb's own settings are the one ``DSHWEB`` dict below, read through
:func:`dshweb.config.get_config`.

The environment is read here, once, and every value is checked as it is read: a setting
dshweb cannot use ends the import with one line naming it, and the process with exit
status 2 (:mod:`dshweb.setting_errors`; ``dshweb doctor`` shows it as a problem row
instead). Importing these settings creates, changes and copies no file: the one I/O is
looking at the data folder (owner, mode, kind of the files in it:
:mod:`dshweb.private_data`) and reading an existing secret key file (:mod:`dshweb.secret_key`).
The data folder is made private and the key created by ``manage.py dshweb_bootstrap``
(``scripts/start`` runs it); the demo home is copied when it is first shown.
"""

from __future__ import annotations

from pathlib import Path

from dshweb import (
    environment,
    environment_otlp,
    environment_server,
    private_data,
    secret_key,
    setting_errors,
)
from dshweb.core.listing.homes import DEFAULT_HOME_NAME

# Every setting is checked as it is read; each one refused is kept (with a safe stand-in)
# and the import ends by refusing them all, one line each (dshweb/setting_errors.py), but
# for `dshweb doctor`, which shows them as problem rows.
_read = setting_errors.Reading()
DATA_DIR = environment.data_dir()
_https = _read(
    environment.https_setup,
    environment.HttpsSetup(False, (), environment.DEFAULT_HSTS_SECONDS),
)
_stores = environment.Stores(
    database_url=_read(lambda: environment.store("DATABASE_URL"), ""),
    redis_url=_read(lambda: environment.store("DSHWEB_REDIS_URL"), ""),
)
_env_secret_key = _read(environment_server.secret_key, "")
_collect = _read(environment.collect, True)
_rates = _read(environment.rates, ("", ""))

# dshweb's own settings (dshweb/config.py says what each means and its default).
DSHWEB: dict[str, object] = {
    "DATA_DIR": DATA_DIR,
    "SECRET_KEY_FILE": not _env_secret_key,
    # A web worker (COLLECT off) never reads a DSH home.
    "DSH_HOME": _read(environment.checked_home, environment.configured_home())
    if _collect
    else environment.configured_home(),
    "DEMO": _read(environment.demo_allowed, True),
    "PROFILE": _read(environment.profile, environment.DEFAULT_PROFILE),
    "FOLD_CHECKPOINTS": _read(environment.fold_checkpoints, True),
    "FOLD_PROCESSES": _read(environment.fold_processes, 0),
    "COLLECT": _collect,
    "HOME_NAME": _read(environment.home_name, DEFAULT_HOME_NAME),
    "ENGINE_URL": _read(environment_server.engine_url, ""),
    "ENGINE": _read(environment_server.engine, ""),
    "PUBLIC_URL": _read(environment_server.public_url, ""),
    "METRICS_TOKEN": _read(environment_server.metrics_token, ""),
    "WEBHOOK_ALLOWED_HOSTS": _read(environment_server.webhook_allowed_hosts, ""),
    "MAIL_ALLOWED_DOMAINS": _read(environment_server.mail_allowed_domains, ""),
    "WEBHOOK_RULES_PER_USER": _read(
        environment.webhook_rules_per_user, environment.DEFAULT_WEBHOOK_RULES_PER_USER
    ),
    "PEAK_WINDOWS": _rates[0],
    "PRICE_AS": _rates[1],
    "LOGIN_THROTTLE_FAILURES": 5,
    "LOGIN_THROTTLE_SECONDS": 300,
    "LOGIN_THROTTLE_ADDRESS_FAILURES": 20,
    "BEHIND_TLS_PROXY": _https.behind_tls_proxy,
    "TRUSTED_PROXIES": _read(environment_server.trusted_proxies, None),
    "TRUSTED_ORIGINS": _https.trusted_origins,
    "HSTS_SECONDS": _https.hsts_seconds,
    # Where the OpenTelemetry export goes, and whether live (docs/opentelemetry.md).
    "OTLP": _read(environment_otlp.otlp, environment_otlp.OtlpTarget()),
}

# The data folder: neither another user's nor writable by others, and only regular files
# where the key and the database are (dshweb/private_data.py).
_sqlite = not _stores.database_url and not _read.refused("DATABASE_URL")
_read.problems.extend(
    private_data.data_problems(
        DATA_DIR,
        names=(
            *(private_data.KEY_FILES if not _env_secret_key else ()),
            *(private_data.DATABASE_FILES if _sqlite else ()),
            *private_data.FOLDERS,
        ),
    )
)
_data_refused = _read.refused(private_data.SETTING)

# Until bootstrap has made the key file, a process signs with a key of its own
# (system check dshweb.W001).
SECRET_KEY = (
    _env_secret_key
    or (
        None
        if _data_refused
        else _read(lambda: secret_key.read_secret_key(DATA_DIR / secret_key.FILE_NAME), None)
    )
    or secret_key.random_secret_key()
)
DEBUG = _read(lambda: environment_server.switch("DSHWEB_DEBUG"), False)
ALLOWED_HOSTS = _read(environment_server.allowed_hosts, ["127.0.0.1", "localhost", "[::1]"])

INSTALLED_APPS = [
    # dshweb's apps, one per capability (docs/development.md, "How it works"): lower ones never
    # import higher ones ([tool.importlinter] in pyproject.toml). Before Django's own, so
    # their templates (the admin's index, the sign-in page) are the ones found.
    "dshweb.site",
    "dshweb.api",
    "dshweb.sessions",
    "dshweb.alerts",
    "dshweb.compaction",
    "dshweb.profiles",
    "dshweb.accounts",
    "dshweb.otlp",
    "dshweb.collect",
    "dshweb.live",
    "dshweb.demo",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
]

MIDDLEWARE = [
    "dshweb.site.server_timing.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language: the one chosen with the switch (a cookie), else Accept-Language.
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "dshweb.urls"
ASGI_APPLICATION = "dshweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],  # each app has its own templates/ (dshweb.site: the layout, error pages)
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dshweb.site.context.dsh_home",
            ],
        },
    },
]

# SQLite and in-process memory unless DATABASE_URL / DSHWEB_REDIS_URL name shared stores;
# none at all when the database is refused (only `dshweb doctor` gets this far then).
DATABASES = {
    "default": (
        environment.NO_DATABASE
        if _read.refused("DATABASE_URL") or (_sqlite and _data_refused)
        else _read(
            lambda: environment.database_settings(_stores, DATA_DIR), environment.NO_DATABASE
        )
    )
}
CHANNEL_LAYERS = {"default": environment.channel_layer_settings(_stores)}
CACHES = {"default": environment.cache_settings(_stores)}

# Alert emails (docs/alerts-api-metrics.md): Django's mail system, to the SMTP server named here.
_mail = _read(environment_server.mail, environment_server.Mail())
EMAIL_HOST = _mail.host
EMAIL_PORT = _mail.port
EMAIL_HOST_USER = _mail.user
EMAIL_HOST_PASSWORD = _mail.password
EMAIL_USE_TLS = _mail.use_tls
DEFAULT_FROM_EMAIL = _mail.sender
EMAIL_TIMEOUT = 10  # seconds: a mail server that hangs holds one delivery thread, not for ever

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"

# English and Simplified Chinese; the catalogs are dshweb/locale/ (docs/development.md,
# "Translations").
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [Path(__file__).resolve().parent / "locale"]
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
# The cost page's days and weeks, and the times Django shows (docs/configuration.md).
TIME_ZONE = _read(environment_server.time_zone, "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"  # made by bootstrap: WhiteNoise warns when it is missing
WHITENOISE_USE_FINDERS = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "dshweb": {"handlers": ["console"], "level": "INFO"},
        "watchfiles": {"level": "WARNING"},  # it logs every batch of changes at INFO
    },
}

# --- Behind HTTPS and a reverse proxy (docs/https.md) ---------------------------
# Origins besides the server's own that may POST forms; the WebSocket origin check accepts
# the same list.
CSRF_TRUSTED_ORIGINS = list(_https.trusted_origins)
if _https.behind_tls_proxy:
    # The proxy terminates TLS and says so; daphne only listens on 127.0.0.1, so no one
    # but the proxy (and local users) can set this header.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = _https.hsts_seconds
    # includeSubDomains and preload bind every name under the domain to HTTPS for good:
    # the domain owner's decision, made at the proxy, not dshweb's.
    SILENCED_SYSTEM_CHECKS = ["security.W005", "security.W021"]

# Every setting refused, one line each: the process ends here (dshweb/setting_errors.py),
# unless it only looks (`dshweb doctor`, which shows these as problem rows).
CONFIGURATION_PROBLEMS = tuple(_read.problems)
if not setting_errors.looking_only():
    _read.done()

# ModelAdmin[Model] and friends at run time. Here, past the refusal: reading the settings
# above needs no Django, so `dshweb serve` refuses a setting before importing any of it.
import django_stubs_ext  # noqa: E402

django_stubs_ext.monkeypatch()
