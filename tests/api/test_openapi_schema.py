"""The JSON API against its own OpenAPI document, on a real server (Daphne on 127.0.0.1),
by schemathesis: generated calls of every operation, signed in with a personal token;
no answer is a 500 and every answer matches the document. Bounded: a few dozen examples
per operation (``MAX_EXAMPLES``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import ignored_auth

from tests.support.homes import home_of_fixtures
from tests.support.server import PASSWORD, USERNAME, DshwebServer, serving

MAX_EXAMPLES = 30


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DshwebServer]:
    home = home_of_fixtures(
        tmp_path_factory.mktemp("api") / "home",
        ("auto-compact", "fold-failures", "subagent-parent"),
    )
    yield from serving(DshwebServer(home, tmp_path_factory.mktemp("api-data")))


@pytest.fixture(scope="module")
def token(server: DshwebServer) -> str:
    """A personal token, made through the tokens page as a person would."""
    browser = requests.Session()
    page = browser.get(f"{server.url}/accounts/login/", timeout=10)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert csrf is not None
    login = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": csrf.group(1)}
    browser.post(f"{server.url}/accounts/login/", data=login, timeout=10)
    form = browser.get(f"{server.url}/tokens/", timeout=10)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert csrf is not None
    made = {"name": "schemathesis", "csrfmiddlewaretoken": csrf.group(1)}
    shown = browser.post(f"{server.url}/tokens/", data=made, timeout=10)
    found = re.search(r'id="new-token-value">([^<]+)<', shown.text)
    assert found is not None, shown.text[:500]
    return found.group(1)


def test_every_answer_matches_the_document(server: DshwebServer, token: str) -> None:
    schema = schemathesis.openapi.from_url(f"{server.url}/api/v1/openapi.json")
    headers = {"Authorization": f"Bearer {token}"}
    checked: list[str] = []
    for found in schema.get_all_operations():
        operation = found.ok()  # type: ignore[union-attr]  # an Err raises, with its reason

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case: Any) -> None:
            # ignored_auth sends made-up credentials beside the token given here and
            # takes the 200 for auth not enforced; tests/api/test_v1.py checks the 401s.
            case.call_and_validate(headers=headers, timeout=30, excluded_checks=[ignored_auth])
            checked.append(case.operation.label)

        check()
    # Every operation was called, most of them many times (a path of one value is one).
    assert {label.split(" ", 1)[1] for label in checked} >= {
        "/api/v1/sessions",
        "/api/v1/homes/{home}/sessions/{session_id}",
        "/api/v1/profiles",
    }
    assert len(checked) >= 3 * MAX_EXAMPLES


SCHEMATHESIS_TIMEOUT = 420


def test_schemathesis_in_its_default_mode_finds_nothing(
    server: DshwebServer, token: str, tmp_path: Path
) -> None:
    """``st run`` as a person runs it: valid and invalid data (``--mode all``, its
    default), every check, every phase; a personal token in the header."""
    import os
    import subprocess
    import sys

    st = Path(sys.executable).parent / "st"
    answer = subprocess.run(
        [
            str(st),
            "run",
            f"{server.url}/api/v1/openapi.json",
            "--mode",
            "all",
            "--checks",
            "all",
            "--header",
            f"Authorization: Bearer {token}",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            "20261204",
            "--generation-deterministic",
            "--request-timeout",
            "30",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=SCHEMATHESIS_TIMEOUT,
        cwd=tmp_path,  # its reports folder (.schemathesis/) goes there
        env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false"},
    )
    assert answer.returncode == 0, answer.stdout[-6000:] + answer.stderr[-2000:]
