"""Django settings for dshweb.

Everything works with no configuration: SQLite and a generated secret key under
``DSHWEB_DATA_DIR``, an in-memory channel layer and cache (``DATABASE_URL`` and
``DSHWEB_REDIS_URL`` name PostgreSQL and Redis instead), loopback only, and the DSH home from
``DSH_HOME`` (else ``~/.dsh``), or a copy of the bundled demo home when that does not
exist. dshweb's own settings are the one ``DSHWEB`` dict below, read through
:func:`dshweb.config.get_config`.

The environment is read here, once. Importing these settings creates, changes and copies
no file: the one I/O is reading an existing secret key file (:mod:`dshweb.secret_key`).
The data folder is made private and the key created by ``manage.py dshweb_bootstrap``
(``scripts/start`` runs it); the demo home is copied when it is first shown.
"""

from __future__ import annotations

import os
from pathlib import Path

import django_stubs_ext

from dshweb import environment, secret_key

django_stubs_ext.monkeypatch()  # ModelAdmin[Model] and friends at run time

DATA_DIR = environment.data_dir()
_https = environment.https_setup()
_stores = environment.stores()
_env_secret_key = os.environ.get("DSHWEB_SECRET_KEY", "")

# dshweb's own settings (dshweb/config.py says what each means and its default).
DSHWEB: dict[str, object] = {
    "DATA_DIR": DATA_DIR,
    "SECRET_KEY_FILE": not _env_secret_key,
    "DSH_HOME": environment.configured_home(),
    "DEMO": environment.demo_allowed(),
    "PROFILE": environment.profile(),
    "FOLD_CHECKPOINTS": environment.fold_checkpoints(),
    "COLLECT": environment.collect(),
    "HOME_NAME": environment.home_name(),
    "ENGINE_URL": os.environ.get("DSHWEB_ENGINE_URL", ""),
    "ENGINE": os.environ.get("DSHWEB_ENGINE", ""),
    "PUBLIC_URL": os.environ.get("DSHWEB_PUBLIC_URL", ""),
    "METRICS_TOKEN": os.environ.get("DSHWEB_METRICS_TOKEN", ""),
    "WEBHOOK_ALLOWED_HOSTS": os.environ.get("DSHWEB_WEBHOOK_ALLOWED_HOSTS", ""),
    "MAIL_ALLOWED_DOMAINS": os.environ.get("DSHWEB_MAIL_ALLOWED_DOMAINS", ""),
    "WEBHOOK_RULES_PER_USER": environment.webhook_rules_per_user(),
    "PEAK_WINDOWS": environment.peak_windows(),
    "PRICE_AS": environment.price_as(),
    "LOGIN_THROTTLE_FAILURES": 5,
    "LOGIN_THROTTLE_SECONDS": 300,
    "LOGIN_THROTTLE_ADDRESS_FAILURES": 20,
    "BEHIND_TLS_PROXY": _https.behind_tls_proxy,
    "TRUSTED_PROXIES": os.environ.get("DSHWEB_TRUSTED_PROXIES") or None,
    "TRUSTED_ORIGINS": _https.trusted_origins,
    "HSTS_SECONDS": _https.hsts_seconds,
}

# Until bootstrap has made the key file, a process signs with a key of its own
# (system check dshweb.W001).
SECRET_KEY = (
    _env_secret_key
    or secret_key.read_secret_key(DATA_DIR / secret_key.FILE_NAME)
    or secret_key.random_secret_key()
)
DEBUG = os.environ.get("DSHWEB_DEBUG", "") == "1"
ALLOWED_HOSTS = [
    h for h in os.environ.get("DSHWEB_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",") if h
]

INSTALLED_APPS = [
    "daphne",
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

# SQLite and in-process memory unless DATABASE_URL / DSHWEB_REDIS_URL name shared stores.
DATABASES = {"default": environment.database_settings(_stores, DATA_DIR)}
CHANNEL_LAYERS = {"default": environment.channel_layer_settings(_stores)}
CACHES = {"default": environment.cache_settings(_stores)}

# Alert emails (docs/alerts-api-metrics.md): Django's mail system, to the SMTP server named here.
EMAIL_HOST = os.environ.get("DSHWEB_EMAIL_HOST", "127.0.0.1")
EMAIL_PORT = int(os.environ.get("DSHWEB_EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("DSHWEB_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("DSHWEB_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = os.environ.get("DSHWEB_EMAIL_TLS", "") == "1"
EMAIL_TIMEOUT = 5
DEFAULT_FROM_EMAIL = os.environ.get("DSHWEB_EMAIL_FROM", "dshweb@localhost")
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
TIME_ZONE = "UTC"
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
