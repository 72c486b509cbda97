"""The ``dshweb`` command (:mod:`dshweb.site.program`) and the commands behind its verbs:
``dshweb_user``, ``dshweb_doctor``, and where the data folder is by default."""

from __future__ import annotations

import importlib.util
import io
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from dshweb import environment
from dshweb.site import program
from dshweb.site.doctor import Status, findings
from tests.conftest import FIXTURE_HOMES, REPO, run_python
from tests.support.server import DshwebServer
from tests.support.visitor import Visitor


def _run(*args: str) -> tuple[int, str]:
    done = run_python("-m", "dshweb", *args)
    return done.returncode, done.stdout + done.stderr


def test_the_program_names_its_verbs_and_its_version() -> None:
    code, said = _run("--help")
    assert code == 0
    for verb in program.VERBS:
        assert re.search(rf"^\s+{verb}\s+\S", said, re.M), said
    code, said = _run("--version")
    assert code == 0 and re.fullmatch(r"dshweb \S+\n", said), said


def test_each_verb_has_its_own_help_without_djangos_options() -> None:
    # Each verb's help in a process of its own, all at once (each starts Django but one).
    with ThreadPoolExecutor(len(program.VERBS)) as pool:
        ran = pool.map(lambda verb: _run(verb, "--help"), program.VERBS)
        helps = dict(zip(program.VERBS, ran, strict=True))
    for verb, (code, said) in helps.items():
        assert code == 0, said
        assert said.startswith(f"usage: dshweb {verb}"), said[:200]
        assert "--pythonpath" not in said and "--settings" not in said
    assert "--open" in helps["serve"][1]


def test_an_unknown_verb_is_refused_with_the_verbs() -> None:
    code, said = _run("frobnicate")
    assert code == 2 and "invalid choice: 'frobnicate'" in said and "serve" in said


def test_snapshot_starts_without_django() -> None:
    code, said = _run("snapshot", "--home", str(FIXTURE_HOMES / "auto-compact"))
    assert code == 0 and said.startswith("auto-compact\t"), said


# -- the data folder ------------------------------------------------------------------------


def test_the_data_folder_is_var_in_a_checkout_and_xdg_data_home_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert environment.data_dir({}) == REPO / "var"  # this is a checkout
    given = {"DSHWEB_DATA_DIR": "/srv/dshweb", "XDG_DATA_HOME": "/x"}
    assert environment.data_dir(given) == Path("/srv/dshweb")
    monkeypatch.setattr(environment, "is_checkout", lambda: False)
    assert environment.data_dir({"XDG_DATA_HOME": "/x/data"}) == Path("/x/data/dshweb")
    home = Path.home()
    assert environment.data_dir({}) == home / ".local/share/dshweb"
    # A relative XDG_DATA_HOME is invalid (the XDG spec) and ignored.
    assert environment.data_dir({"XDG_DATA_HOME": "rel"}) == home / ".local/share/dshweb"


def test_a_team_store_without_the_team_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "channels_redis" else real(name, *a),
    )
    monkeypatch.setenv("DSHWEB_REDIS_URL", "redis://127.0.0.1:6379/0")
    with pytest.raises(environment.ConfigurationError) as refused:
        environment.stores()
    assert "channels_redis is not installed" in str(refused.value)
    assert "pip install 'dshweb[team]'" in str(refused.value)
    monkeypatch.delenv("DSHWEB_REDIS_URL")
    assert environment.stores().redis_url == ""


# -- dshweb user ----------------------------------------------------------------------------


def _user(*args: str, stdin: str | None = None, monkeypatch: Any = None) -> str:
    out = io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    call_command("dshweb_user", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_user_add_prints_a_password_once_that_signs_in(client: Any) -> None:
    said = _user("add", "ling", "--staff")
    password = re.fullmatch(r"dshweb: added user 'ling' with password '(\S+)' .*\n", said)
    assert password, said
    user = get_user_model().objects.get(username="ling")
    assert user.is_staff and not user.is_superuser
    assert user.check_password(password[1])
    assert password[1] not in user.password  # only its hash is kept
    assert client.login(username="ling", password=password[1])


@pytest.mark.django_db
def test_user_add_refuses_a_name_taken_and_passwd_an_unknown_name() -> None:
    _user("add", "ling")
    with pytest.raises(CommandError, match="cannot add 'ling': A user with that username"):
        _user("add", "ling")
    with pytest.raises(CommandError, match="no user 'nobody'"):
        _user("passwd", "nobody")


@pytest.mark.django_db
def test_user_passwd_reads_stdin_and_checks_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    _user("add", "ling")
    said = _user(
        "passwd", "ling", "--password-stdin", stdin="long-enough-9Xq\n", monkeypatch=monkeypatch
    )
    assert said == "dshweb: changed the password of user 'ling'\n"
    assert get_user_model().objects.get(username="ling").check_password("long-enough-9Xq")
    with pytest.raises(CommandError, match="too short"):
        _user("passwd", "ling", "--password-stdin", stdin="abc\n", monkeypatch=monkeypatch)
    assert get_user_model().objects.get(username="ling").check_password("long-enough-9Xq")


# -- dshweb doctor --------------------------------------------------------------------------


def _found(settings: Any, home: Path) -> dict[str, tuple[Status, str, str]]:
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": home}
    return {f.part: (f.status, f.seen, f.fix) for f in findings()}


@pytest.mark.django_db
def test_doctor_counts_the_sessions_and_names_each_profile(settings: Any) -> None:
    found = _found(settings, FIXTURE_HOMES / "told-truth")
    status, seen, _ = found["DSH home"]
    assert status is Status.OK
    count = len(list((FIXTURE_HOMES / "told-truth" / "sessions").glob("*/*")))
    assert count == 1 and seen.endswith(": 1 session")
    assert found["database"][0] is Status.OK
    assert found["Redis"][0] is Status.OK and "not configured" in found["Redis"][1]
    profiles = {part for part in found if part.startswith("profile ")}
    expected = {p.name for p in (FIXTURE_HOMES / "told-truth" / "profiles").iterdir()}
    assert profiles >= {f"profile {name}" for name in expected}


@pytest.mark.django_db
def test_doctor_names_the_models_priced_as_another(settings: Any) -> None:
    """Issue 43: DSH's own deepseek-flash is priced as the registry's deepseek-v4-flash
    unless DSHWEB_PRICE_AS says otherwise, and the doctor says which is in force."""
    settings.DSHWEB = {k: v for k, v in settings.DSHWEB.items() if k != "PRICE_AS"}
    status, seen, fix = _found(settings, FIXTURE_HOMES / "told-truth")["prices"]
    assert status is Status.OK
    assert seen.startswith("deepseek-flash priced as deepseek-v4-flash"), seen
    assert "DSHWEB_PRICE_AS=none" in fix
    settings.DSHWEB = {**settings.DSHWEB, "PRICE_AS": "none"}
    status, seen, fix = _found(settings, FIXTURE_HOMES / "told-truth")["prices"]
    assert "every model as the dsh-llm-cost registry prices it" in seen
    assert fix == "DSHWEB_PRICE_AS=deepseek-flash=deepseek-v4-flash prices DSH's own model"


@pytest.mark.django_db
def test_doctor_says_when_the_home_is_empty_or_missing(settings: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    status, seen, fix = _found(settings, empty)["DSH home"]
    assert status is Status.NOTE and "no session logs yet" in seen and fix
    settings.DSHWEB = {**settings.DSHWEB, "DEMO": True, "DATA_DIR": tmp_path / "data"}
    status, seen, fix = _found(settings, tmp_path / "missing")["DSH home"]
    assert status is Status.NOTE and "shows the demo home" in seen
    assert not (tmp_path / "data").exists()  # the doctor looks; it makes no demo copy
    settings.DSHWEB = {**settings.DSHWEB, "DEMO": False}
    status, seen, fix = _found(settings, tmp_path / "missing")["DSH home"]
    assert status is Status.PROBLEM and seen.endswith("missing does not exist")
    assert "DSH_HOME" in fix


@pytest.mark.django_db
def test_doctor_exits_1_on_a_problem_and_prints_each_fix(settings: Any, tmp_path: Path) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "DEMO": False}
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 problem"):
        call_command("dshweb_doctor", "--home", str(tmp_path / "missing"), stdout=out)
    assert re.search(
        r"^problem +DSH home +\S+missing is not a folder: dshweb serve --home refuses it\n"
        r" +→ name the folder DSH writes",
        out.getvalue(),
        re.M,
    )
    # Issue 43: with the demo allowed, --home names a home all the same (serve refuses it,
    # so the doctor says the demo would not be shown: at f4ab7dd it said it would).
    settings.DSHWEB = {**settings.DSHWEB, "DEMO": True, "DATA_DIR": tmp_path / "data"}
    with pytest.raises(CommandError, match="1 problem"):
        call_command("dshweb_doctor", "--home", str(tmp_path / "missing"), stdout=out)
    assert "demo" not in out.getvalue()


@pytest.mark.django_db
def test_doctor_finds_dsh_context_truth_where_it_is_installed(
    settings: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / "told-truth", home)  # a bundle, its package not installed
    status, seen, fix = _found(settings, home)["profile sdk"]
    assert status is Status.NOTE and "no dsh-context-truth" in seen
    assert fix == "dsh plugin --profile sdk add github:deepseekv41flash/dsh-context-truth"
    package = home / "profiles/sdk/node_modules/dsh-context-truth/package.json"
    package.parent.mkdir(parents=True)
    package.write_text('{"name": "dsh-context-truth", "version": "0.1.3"}')
    assert _found(settings, home)["profile sdk"] == (
        Status.OK,
        "dsh-context-truth is assembled",
        "",
    )


def test_the_first_start_signs_with_the_key_it_keeps(tmp_path: Path) -> None:
    """A first ``dshweb serve`` on a data folder without a key file signs with the key
    bootstrap keeps there, so a sign-in (and every fold checkpoint) outlives a restart (at
    c9a450b the first start held a random key of its own: signed out at the restart)."""
    server = DshwebServer(home=FIXTURE_HOMES / "auto-compact", data_dir=tmp_path / "data")
    server.as_dshweb_serve()
    server.prepare()
    (tmp_path / "data" / "secret_key").unlink()  # as on a first start
    server.start()
    try:
        visitor = Visitor(server)
        assert 'id="sessions"' in visitor.get("/")[1]
        server.restart()
        status, page = visitor.get("/")
        assert status == 200 and 'id="sessions"' in page, page[:300]
    finally:
        server.stop()
