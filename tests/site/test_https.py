"""Settings behind HTTPS: the environment's switch and origins, what they turn on, and
``manage.py check --deploy`` clean in that mode (real child processes: settings are read
once, at start)."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
from pathlib import Path

import pytest

from dshweb import environment
from dshweb.environment import ConfigurationError, HttpsSetup, https_setup, trusted_origins
from tests.conftest import run_python

HTTPS_SETTINGS = (
    "CSRF_TRUSTED_ORIGINS",
    "SECURE_PROXY_SSL_HEADER",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "DEBUG",
)


@pytest.mark.parametrize(
    ("value", "origins"),
    [
        ("", ()),
        (" , ", ()),
        ("https://dsh.example.com", ("https://dsh.example.com",)),
        (
            " https://dsh.example.com/ ,http://127.0.0.1:8443,https://*.example.org",
            ("https://dsh.example.com", "http://127.0.0.1:8443", "https://*.example.org"),
        ),
        ("https://[::1]:8443", ("https://[::1]:8443",)),
    ],
)
def test_trusted_origins_are_read(value: str, origins: tuple[str, ...]) -> None:
    assert trusted_origins(value) == origins


@pytest.mark.parametrize(
    "value",
    [
        "dsh.example.com",
        "https://",
        "ftp://dsh.example.com",
        "https://dsh.example.com/dashboard",
        "https://dsh.example.com:port",
        "https://dsh.example.com:99999",
        "https://user@dsh.example.com",
        "https://dsh.example.com?x=1",
        "https://ok.example.com,dsh.example.com",
    ],
)
def test_a_trusted_origin_that_is_not_one_is_refused(value: str) -> None:
    with pytest.raises(ConfigurationError, match=r"DSHWEB_TRUSTED_ORIGINS: .* not an origin"):
        trusted_origins(value)


def test_https_setup_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DSHWEB_BEHIND_TLS_PROXY", "DSHWEB_TRUSTED_ORIGINS", "DSHWEB_HSTS_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    assert https_setup() == HttpsSetup(False, (), environment.DEFAULT_HSTS_SECONDS)
    monkeypatch.setenv("DSHWEB_BEHIND_TLS_PROXY", "1")
    monkeypatch.setenv("DSHWEB_TRUSTED_ORIGINS", "https://dsh.example.com")
    monkeypatch.setenv("DSHWEB_HSTS_SECONDS", "3600")
    assert https_setup() == HttpsSetup(True, ("https://dsh.example.com",), 3600)
    monkeypatch.setenv("DSHWEB_BEHIND_TLS_PROXY", "0")
    assert https_setup().behind_tls_proxy is False


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DSHWEB_BEHIND_TLS_PROXY", "true"),  # must not silently mean off
        ("DSHWEB_BEHIND_TLS_PROXY", "yes"),
        ("DSHWEB_HSTS_SECONDS", "1y"),
        ("DSHWEB_HSTS_SECONDS", "-1"),
    ],
)
def test_a_value_dshweb_cannot_use_is_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name):
        https_setup()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_"))}
    return env | {
        "DSH_HOME": str(tmp_path / "home"),
        "DSHWEB_DATA_DIR": str(tmp_path / "data"),
        "DSHWEB_NO_DEMO": "1",
        # As after the first start: no dshweb.W001 (no key kept yet) among the warnings.
        "DSHWEB_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_SETTINGS_MODULE": "dshweb.settings",
        **extra,
    }


def _settings(env: dict[str, str]) -> dict[str, object]:
    code = (
        "import django, json; django.setup(); from django.conf import settings; "
        f"print(json.dumps({{n: getattr(settings, n) for n in {HTTPS_SETTINGS!r}}}))"
    )
    done = run_python("-c", code, env=env)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert isinstance(loaded, dict)
    return loaded


def test_behind_a_tls_proxy_settings(tmp_path: Path) -> None:
    origins = "https://dsh.example.com,https://dsh.example.com:8443"
    on = _settings(_env(tmp_path, DSHWEB_BEHIND_TLS_PROXY="1", DSHWEB_TRUSTED_ORIGINS=origins))
    assert on == {
        "CSRF_TRUSTED_ORIGINS": ["https://dsh.example.com", "https://dsh.example.com:8443"],
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_SSL_REDIRECT": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "DEBUG": False,
    }
    off = _settings(_env(tmp_path))
    assert off == {
        "CSRF_TRUSTED_ORIGINS": [],
        "SECURE_PROXY_SSL_HEADER": None,
        "SECURE_SSL_REDIRECT": False,
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_HSTS_SECONDS": 0,
        "DEBUG": False,
    }


def _check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_python("manage.py", "check", "--deploy", "--fail-level", "WARNING", env=env)


def test_check_deploy_is_clean_behind_a_tls_proxy(tmp_path: Path) -> None:
    done = _check_deploy(_env(tmp_path, DSHWEB_BEHIND_TLS_PROXY="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (2 silenced)." in done.stdout


def test_check_deploy_names_what_the_proxy_mode_turns_on(tmp_path: Path) -> None:
    done = _check_deploy(_env(tmp_path))
    assert done.returncode == 1
    warnings = sorted(set(re.findall(r"\(security\.(W\d+)\)", done.stderr)))
    # HSTS, SSL redirect, secure session and CSRF cookies: exactly what the switch sets.
    assert warnings == ["W004", "W008", "W012", "W016"], done.stderr
