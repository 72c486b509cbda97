"""Django settings for dshweb.

Everything works with no configuration: SQLite and a generated secret key under
``DSHWEB_DATA_DIR``, an in-memory channel layer, loopback only, and the DSH home from
``DSH_HOME`` (else ``~/.dsh``), or a copy of the bundled demo home when that does not
exist.
"""

from __future__ import annotations

import os
import secrets

import django_stubs_ext

from dshweb import environment, private_data

django_stubs_ext.monkeypatch()  # ModelAdmin[Model] and friends at run time

BASE_DIR = environment.BASE_DIR
DATA_DIR = environment.data_dir()
# 0700 folder, 0600 secrets (shared hosts); the app logs what had to be tightened.
DATA_DIR_PRIVACY_CHANGES = private_data.make_private(DATA_DIR)


def _secret_key() -> str:
    if key := os.environ.get("DSHWEB_SECRET_KEY"):
        return key
    path = DATA_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        key = secrets.token_urlsafe(50)
        try:
            private_data.write_secret(path, key)
        except FileExistsError:  # another process made it first
            return path.read_text().strip()
        return key


SECRET_KEY = _secret_key()
DEBUG = os.environ.get("DSHWEB_DEBUG", "") == "1"
ALLOWED_HOSTS = [
    h for h in os.environ.get("DSHWEB_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",") if h
]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "dshweb.dashboard",
    "dshweb.live",
]

MIDDLEWARE = [
    "dshweb.dashboard.timing.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
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
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dshweb.dashboard.context.dsh_home",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "db.sqlite3",
        # Writers queue instead of failing: every transaction takes the write lock when it
        # begins (a deferred one upgrading under another writer fails at once with
        # "database is locked"), and waits up to 20 s for it.
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
    }
}

CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

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

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns when it is missing
WHITENOISE_USE_FINDERS = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The demo is a writable copy of the bundled home: a recorded session is replayed into it.
_home = environment.home_choice()
DSH_HOME, DSH_HOME_IS_DEMO = _home.path, _home.is_demo
DSH_PROFILE = environment.profile()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "dshweb": {"handlers": ["console"], "level": "INFO"},
        "watchfiles": {"level": "WARNING"},  # it logs every batch of changes at INFO
    },
}

# --- Behind HTTPS and a reverse proxy (README "Behind HTTPS") ---------------------------
_https = environment.https_setup()
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

# Failed sign-ins (dshweb/accounts/throttle.py): after this many failures for one username
# from one address, each within the cool-off of the last, that pair is refused until the
# cool-off has passed. Counted in the default cache (local memory, per process).
LOGIN_THROTTLE_FAILURES = 5
LOGIN_THROTTLE_SECONDS = 300

# The hub (dshweb/live/hub.py) saves each session's fold state in the database, so a
# restart folds only what the logs gained since.
DSHWEB_FOLD_CHECKPOINTS = environment.fold_checkpoints()
