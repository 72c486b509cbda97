"""The JSON API (/api/v1/): its answers against the fixture sessions' own figures, its
two ways in (the browser's session, a personal token made and revoked in the browser),
and its OpenAPI document; then schemathesis against that document on a real server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.test import Client

from dshweb.accounts.models import ApiToken
from dshweb.accounts.tokens import token_create
from dshweb.core.fold.steps import STEP_COLUMNS, StepRow, fold_steps
from dshweb.core.log.home import session_logs
from dshweb.core.profile.effective import (
    DEFAULT_RULE,
    EffectiveSettings,
    EngineConfig,
    SettingsTable,
)
from dshweb.core.profile.layers import engine_config
from tests.support.homes import home_of_fixtures
from tests.support.snapshots import fixture_snapshot

pytestmark = [pytest.mark.django_db]

SESSIONS = ("auto-compact", "pace-steady", "fold-failures", "big-tools")


@pytest.fixture
def home(tmp_path: Path, settings: Any, fresh_hub: None) -> Path:
    target = home_of_fixtures(tmp_path / "home", SESSIONS)
    settings.DSHWEB = {**settings.DSHWEB, "DSH_HOME": target, "PROFILE": "sdk"}
    return target


def signed_in() -> tuple[Client, Any]:
    user = get_user_model().objects.create_user("reader", password="pw-for-tests-only")
    client = Client()
    client.force_login(user)
    return client, user


def streamed(answer: Any) -> bytes:
    """A streamed answer's body (its chunks come from an asynchronous iterator)."""

    async def read() -> bytes:
        return b"".join([chunk async for chunk in answer.streaming_content])

    return async_to_sync(read)()


def get(client: Client, path: str, **headers: str) -> tuple[int, Any]:
    answer = client.get(path, headers=headers)
    return answer.status_code, json.loads(answer.content)


def test_without_a_login_every_call_is_a_401_in_json(home: Path) -> None:
    for path in (
        "/api/v1/sessions",
        "/api/v1/homes/local/sessions/auto-compact",
        "/api/v1/profiles",
    ):
        assert get(Client(), path) == (401, {"detail": "Unauthorized"})


def test_the_sessions_list_pages_and_filters_as_the_list_does(home: Path) -> None:
    client, _ = signed_in()
    status, body = get(client, "/api/v1/sessions?per_page=2")
    assert status == 200
    assert (body["matched"], body["pages"], body["perPage"], len(body["sessions"])) == (4, 2, 2, 2)
    status, body = get(client, "/api/v1/sessions?sort=percent")
    rows = {row["sessionId"]: row for row in body["sessions"]}
    assert set(rows) == set(SESSIONS)
    percents = [row["percent"] for row in body["sessions"]]
    assert percents == sorted(percents, reverse=True)
    steady = fixture_snapshot("pace-steady")
    row = rows["pace-steady"]
    assert (row["home"], row["cwd"], row["live"]) == ("local", steady.cwd, False)
    assert row["usedTokens"] == steady.used_tokens and row["thresholdTokens"] == 12_000
    assert steady.used_tokens is not None
    assert row["headroomTokens"] == 12_000 - steady.used_tokens
    folder = steady.cwd
    assert folder is not None
    _, only = get(client, f"/api/v1/sessions?folder={folder}")
    assert [r["sessionId"] for r in only["sessions"]] == ["pace-steady"]
    _, tight = get(client, "/api/v1/sessions?band=tight")
    assert {r["sessionId"] for r in tight["sessions"]} == {
        r["sessionId"] for r in rows.values() if r["band"] == "tight"
    }
    _, live = get(client, "/api/v1/sessions?live=true")
    assert live["matched"] == 0


def test_one_session_is_the_snapshot_json_with_the_gauge(home: Path) -> None:
    client, _ = signed_in()
    status, body = get(client, "/api/v1/homes/local/sessions/fold-failures")
    assert status == 200
    shot = fixture_snapshot("fold-failures")
    expected = shot.as_json()
    for key in (
        "lastSeq",
        "events",
        "tokenUsage",
        "contextPressure",
        "contextBreakdown",
        "compactions",
    ):
        assert body[key] == expected[key], key
    assert body["compaction"]["inferred"] == shot.inferred.as_json()
    assert body["band"] in {"moderate", "tight", "critical"} and body["home"] == "local"
    keys = {"steps", "stepsLow", "stepsHigh", "minutes", "reason", "point", "pace"}
    assert set(body["forecast"]) == set(body["summaryForecast"]) == keys
    # Both go by the profile's point, which the engine's decisions allow (12,000).
    profile = {"low": 12_000, "high": 12_000, "source": "profile"}
    assert body["forecast"]["point"] == body["summaryForecast"]["point"] == profile
    # Its last step was long ago: idle, as of now (the snapshot's own JSON has no clock).
    assert body["forecast"]["reason"] == body["summaryForecast"]["reason"] == "idle"
    assert expected["forecast"]["steps"] is not None and expected["summaryForecast"]["steps"]


def test_the_timeline_and_the_ledger(home: Path) -> None:
    client, _ = signed_in()
    shot = fixture_snapshot("fold-failures")
    _, timeline = get(client, "/api/v1/homes/local/sessions/fold-failures/timeline")
    points = shot.ledger.points
    assert len(timeline["points"]) == len(points)
    first = timeline["points"][0]
    assert (first["seq"], first["tokens"]) == (points[0].seq, points[0].tokens)
    assert first["percent"] == round(points[0].tokens / 24_000 * 100)
    assert timeline["windowTokens"] == 24_000 and timeline["thresholdTokens"] == 12_000
    _, ledger = get(client, "/api/v1/homes/local/sessions/fold-failures/ledger")
    compactions = ledger["folds"]
    assert [(f["kind"], f["status"], f["seq"]) for f in compactions] == [
        (f.kind, f.status, f.seq) for f in shot.ledger.compactions
    ]
    assert compactions[1]["error"].startswith("summary is not smaller")


def test_unknown_homes_and_sessions_are_404s_that_say_which(home: Path) -> None:
    client, _ = signed_in()
    assert get(client, "/api/v1/homes/local/sessions/nope") == (
        404,
        {"detail": "no session 'nope' in home 'local'"},
    )
    assert get(client, "/api/v1/homes/elsewhere/sessions/auto-compact")[0] == 404


def test_a_path_no_call_answers_is_a_json_404_even_with_a_newline(home: Path) -> None:
    client, _ = signed_in()
    for path in ("/api/v1/homes/local/sessions/a%0Ab", "/api/v1/nothing", "/api/v2/sessions"):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert answer["Content-Type"] == "application/json"
        assert json.loads(answer.content) == {"detail": "Not Found"}
    page = client.get("/no-such-page/")  # the site's own 404 stays a page
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_a_query_value_of_the_wrong_kind_is_a_documented_422(home: Path) -> None:
    client, _ = signed_in()
    status, body = get(client, "/api/v1/sessions?sort=null&live=null")
    assert status == 422
    assert {tuple(item["loc"]) for item in body["detail"]} == {("query", "sort"), ("query", "live")}
    _, document = get(Client(), "/api/v1/openapi.json")
    listed = document["paths"]["/api/v1/sessions"]["get"]["responses"]
    assert set(listed) == {"200", "401", "422", "503"}
    refused = listed["422"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    assert set(document["components"]["schemas"][refused]["properties"]) == {"detail"}


def test_every_credential_presented_must_hold(home: Path) -> None:
    client, user = signed_in()
    _, token = token_create(user=user, name="both")
    good = {"Authorization": f"Bearer {token}"}
    assert get(client, "/api/v1/sessions", **good)[0] == 200  # both hold
    # A signed-in browser with a token that does not hold beside its session: refused.
    assert get(client, "/api/v1/sessions", Authorization=f"Bearer {token}x")[0] == 401
    # A good token beside a session cookie that signs no one in: refused.
    stale = Client()
    stale.cookies["sessionid"] = "not-a-session"
    assert get(stale, "/api/v1/sessions", **good)[0] == 401
    assert get(Client(), "/api/v1/sessions", **good)[0] == 200  # the token alone


def test_profiles_give_the_effective_engine_and_bands(home: Path) -> None:
    client, _ = signed_in()
    _, body = get(client, "/api/v1/profiles")
    sdk = next(p for p in body["profiles"] if p["profile"] == "sdk")
    assert sdk["engine"]["thresholdRatio"] == 0.5 and sdk["engine"]["headroomTokens"] == 1000
    assert sdk["bands"] == {"moderateAt": 0.5, "tightAt": 0.85, "hysteresis": 0.05}
    assert body["elsewhere"] == []


def test_a_token_made_in_the_browser_opens_the_api_until_revoked(home: Path) -> None:
    client, user = signed_in()
    made = client.post("/tokens/", {"name": "notebook"})
    assert made.status_code == 200
    token = made.content.decode().split('id="new-token-value">')[1].split("<")[0]
    assert token.startswith("dshweb_") and token not in client.get("/tokens/").content.decode()
    row = ApiToken.objects.get(user=user)
    assert row.digest != token and token not in row.digest and row.last_used_at is None
    bearer = {"Authorization": f"Bearer {token}"}
    status, body = get(Client(), "/api/v1/sessions", **bearer)
    assert status == 200 and body["matched"] == 4
    assert ApiToken.objects.get(pk=row.pk).last_used_at is not None
    assert get(Client(), "/api/v1/sessions", Authorization=f"Bearer {token}x")[0] == 401
    client.post(f"/tokens/{row.pk}/revoke/")
    assert get(Client(), "/api/v1/sessions", **bearer)[0] == 401
    assert ApiToken.objects.get().revoked_at is not None


def test_another_users_token_cannot_be_revoked(home: Path) -> None:
    _, owner = signed_in()
    row = ApiToken.objects.create(user=owner, name="x", prefix="dshweb_abc", digest="0" * 64)
    other = get_user_model().objects.create_user("other", password="pw-for-tests-only")
    client = Client()
    client.force_login(other)
    assert client.post(f"/tokens/{row.pk}/revoke/").status_code == 404
    assert ApiToken.objects.get().revoked_at is None


def test_the_openapi_document_and_its_page(home: Path) -> None:
    status, document = get(Client(), "/api/v1/openapi.json")
    assert status == 200 and document["info"]["title"] == "dshweb"
    paths = set(document["paths"])
    assert {
        "/api/v1/sessions",
        "/api/v1/homes/{home}/sessions/{session_id}",
        "/api/v1/homes/{home}/sessions/{session_id}/timeline",
        "/api/v1/homes/{home}/sessions/{session_id}/ledger",
        "/api/v1/profiles",
    } <= paths
    assert Client().get("/api/v1/docs").status_code == 302  # a page: behind the sign-in
    client, _ = signed_in()
    docs = client.get("/api/v1/docs").content.decode()
    # A page of the site: every call of the document, how to get a token, no outside script
    for path in paths:
        assert f"<code>GET {path}</code>" in docs
    assert 'href="/tokens/"' in docs and 'href="/api/v1/openapi.json"' in docs
    assert 'id="site-header"' in docs and '<script src="http' not in docs


def test_every_step_streams_from_the_log_as_json_and_csv(home: Path) -> None:
    client, _ = signed_in()
    log = next(log for log in session_logs(home) if log.session_dir.name == "fold-failures")
    expected: list[StepRow] = []
    engine = EngineConfig.from_config(engine_config(home, "sdk"))
    sdk = SettingsTable("sdk", EffectiveSettings(engine, DEFAULT_RULE, None))  # no preset
    assert fold_steps(log, table=sdk, on_row=expected.append) is None
    answer = client.get("/api/v1/homes/local/sessions/fold-failures/steps")
    assert answer.status_code == 200 and answer.streaming
    body = json.loads(streamed(answer))
    assert (body["home"], body["session"], body["error"]) == ("local", "fold-failures", None)
    assert [tuple(step.values()) for step in body["steps"]] == expected
    page = client.get("/homes/local/sessions/fold-failures/steps.csv")
    assert page["Content-Disposition"] == 'attachment; filename="fold-failures-steps.csv"'
    lines = streamed(page).decode().splitlines()
    assert lines[0] == ",".join(STEP_COLUMNS) and len(lines) == len(expected) + 1
    first = lines[1].split(",")
    assert first[:2] == ["1", str(expected[0][1])] and first[9] == expected[0][9]
    detail = client.get("/homes/local/sessions/fold-failures/").content.decode()
    assert 'data-steps="csv"' in detail


def test_a_log_that_breaks_part_way_says_so_at_the_end_of_its_steps(home: Path) -> None:
    client, _ = signed_in()
    log = next(log for log in session_logs(home) if log.session_dir.name == "pace-steady")
    data = log.path.read_bytes()
    log.path.write_bytes(data[: len(data) // 2] + b"\x00" * 64 + data[len(data) // 2 :])
    answer = client.get("/api/v1/homes/local/sessions/pace-steady/steps")
    body = json.loads(streamed(answer))
    assert body["error"] is not None and "byte" in body["error"]
    whole: list[StepRow] = []
    fold_steps(log, table=None, on_row=whole.append)
    assert 0 < len(body["steps"]) == len(whole)  # the steps before the break are all there
