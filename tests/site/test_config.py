"""dshweb's settings (dshweb/config.py): ``settings.py`` reads the environment once and
touches no file; one ``DSHWEB`` dict, read through a cached accessor that follows
``override_settings``; the demo home is copied when it is first shown."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import override_settings

from dshweb.compaction import which_dsh_web
from dshweb.config import DEFAULTS, get_config
from dshweb.environment import HomeChoice
from dshweb.live import service
from dshweb.setting_errors import ConfigurationError
from tests.conftest import REPO, run_python


def _clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No dshweb or DSH variable, and a home folder of its own (so ``~/.dsh`` is absent)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DSHWEB_", "DJANGO_", "DSH_"))}
    (tmp_path / "user").mkdir()
    return env | {
        "HOME": str(tmp_path / "user"),
        "DSHWEB_DATA_DIR": str(tmp_path / "data"),
        "DJANGO_SETTINGS_MODULE": "dshweb.settings",
        **extra,
    }


def test_importing_the_settings_touches_no_file(tmp_path: Path) -> None:
    code = (
        "import django; django.setup(); from dshweb.config import get_config; "
        "print(get_config().dsh_home, get_config().demo)"
    )
    done = run_python("-c", code, env=_clean_env(tmp_path))
    assert done.returncode == 0, done.stderr
    # The home is absent and the demo allowed: the demo is copied when first shown, not now.
    assert done.stdout.split() == [str(tmp_path / "user" / ".dsh"), "True"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["user"]


def test_migrate_before_the_first_start_names_the_bootstrap(tmp_path: Path) -> None:
    done = run_python("manage.py", "migrate", "--noinput", env=_clean_env(tmp_path))
    assert done.returncode == 1
    assert "dshweb.E001" in done.stderr
    assert "dshweb.W001" in done.stderr
    assert "manage.py dshweb_bootstrap" in done.stderr
    assert not (tmp_path / "data").exists()


def test_an_override_changes_the_config_and_is_undone(tmp_path: Path) -> None:
    before = get_config()
    given = {**django_settings.DSHWEB, "PROFILE": "other", "DSH_HOME": str(tmp_path)}
    with override_settings(DSHWEB=given):
        assert get_config().profile == "other"
        assert get_config().dsh_home == tmp_path
    assert get_config() == before


def test_a_key_left_out_takes_its_default() -> None:
    with override_settings(DSHWEB={"PROFILE": "other"}):
        config = get_config()
    assert config.profile == "other"
    assert config.dsh_home == Path.home() / ".dsh"
    assert (config.login_throttle_failures, config.login_throttle_seconds) == (5, 300)
    assert (config.demo, config.fold_checkpoints, config.engine_url) == (True, True, "")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"PROFIL": "x"}, "unknown key PROFIL"),
        ({"DEMO": "yes"}, r"DSHWEB\['DEMO'\]: 'yes' is not a bool"),
        ({"DATA_DIR": 3}, r"DSHWEB\['DATA_DIR'\]: 3 is not a path"),
        ({"TRUSTED_ORIGINS": "https://a.example"}, "not a list of origins"),
        ({"HOME_NAME": "my home"}, r"DSHWEB\['HOME_NAME'\]: 'my home' is not a home name"),
        ({"HOME_NAME": ""}, "is not a home name: use 1 to 64 ASCII letters"),
        ({"WEBHOOK_RULES_PER_USER": -1}, r"\['WEBHOOK_RULES_PER_USER'\]: -1 is not a count"),
        ({"WEBHOOK_RULES_PER_USER": True}, "True is not a count"),
        ({"WEBHOOK_RULES_PER_USER": "10"}, "'10' is not a int"),
        (
            {"PEAK_WINDOWS": "1-4"},
            r"DSHWEB\['PEAK_WINDOWS'\]: '1-4' is not HH:MM-HH:MM",
        ),
        (
            {"PEAK_WINDOWS": "01:00-04:10"},
            r"DSHWEB\['PEAK_WINDOWS'\]: '01:00-04:10': times are quarter hours",
        ),
        (
            {"PRICE_AS": "deepseek-flash=deepseek-v9"},
            r"DSHWEB\['PRICE_AS'\]: 'deepseek-v9' is not in the dsh-llm-cost registry",
        ),
    ],
)
def test_a_setting_dshweb_cannot_use_is_refused(given: dict[str, object], message: str) -> None:
    with override_settings(DSHWEB=given), pytest.raises(ConfigurationError, match=message):
        get_config()


@pytest.mark.django_db
def test_compact_reads_its_dsh_web_from_the_settings(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment is read once, by settings.py: a variable set later changes nothing.
    monkeypatch.setenv("DSHWEB_ENGINE_URL", "http://127.0.0.1:1/?token=from-the-environment")
    settings.DSHWEB = {**settings.DSHWEB, "ENGINE_URL": "", "ENGINE": ""}
    assert which_dsh_web.dsh_web_choice()[:2] == ("off", None)
    assert which_dsh_web.dsh_web_from_environment() is None
    url = "http://127.0.0.1:9/?token=t"
    settings.DSHWEB = {**settings.DSHWEB, "ENGINE_URL": url}
    assert which_dsh_web.dsh_web_choice() == ("url", url, "")
    assert which_dsh_web.dsh_web_from_environment() == "DSHWEB_ENGINE_URL (a launch URL)"


def test_the_hub_follows_the_settings(tmp_path: Path, settings: Any) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for home in (first, second):
        (home / "sessions").mkdir(parents=True)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": first}
    hub = service.current_hub()
    assert (hub.home, hub.profile) == (first, get_config().profile)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": second}
    assert service.current_hub().home == second


def test_the_demo_home_is_copied_when_first_shown(tmp_path: Path, settings: Any) -> None:
    data, absent = tmp_path / "data", tmp_path / "absent"
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": absent, "DEMO": True, "DATA_DIR": data}
    assert not data.exists()
    assert service.own_home() == HomeChoice(data / "demo-home", True)
    assert (data / "demo-home" / "sessions").is_dir()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    settings.DSHWEB = {**settings.DSHWEB, "DEMO": False}
    assert service.own_home() == HomeChoice(absent, False)


def test_the_readme_table_names_every_dshweb_setting() -> None:
    readme = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r'\["([A-Z_]+)"\]', section))
    assert named == set(DEFAULTS) - {"SECRET_KEY_FILE"}  # that one follows DSHWEB_SECRET_KEY


def test_dshweb_hashes_passwords_as_django_does_and_only_the_test_servers_do_not() -> None:
    """dshweb's settings leave Django's password hashers (PBKDF2 first); the servers the
    tests start (tests/support/child_settings.py) change those and nothing else."""
    from django.conf import global_settings

    import dshweb.settings as own
    from tests.support import child_settings as child

    assert not hasattr(own, "PASSWORD_HASHERS")
    assert global_settings.PASSWORD_HASHERS[0].endswith(".PBKDF2PasswordHasher")

    ours, theirs = ({k: getattr(m, k) for k in dir(m) if k.isupper()} for m in (own, child))
    changed = {k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k)}
    assert changed == {"PASSWORD_HASHERS"}
