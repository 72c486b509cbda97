"""Stuck and slow states against a real dshweb server (Daphne in a child process on
127.0.0.1, its own SQLite file): ten Compact presses at once each get an answer, and a
request a killed server left in flight is closed with a reason when it starts again."""

from __future__ import annotations

import html.parser
import http.cookiejar
import re
import shutil
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_HOMES
from tests.support.server import PASSWORD, USERNAME, DshwebServer
from tests.support.stores import query_rows

SESSION = "manual-compact"
PRESSES = 10


class Browser:
    """A signed-in HTTP client (cookies and CSRF) for the real server."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        page = self.get("/accounts/login/")[1]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token is not None
        status, _ = self.post(
            "/accounts/login/",
            {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)},
        )
        assert status == 200 and any(c.name == "sessionid" for c in self.jar)

    @property
    def csrf(self) -> str:
        return next(c.value or "" for c in self.jar if c.name == "csrftoken")

    def _open(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=30) as reply:
                return int(reply.status), reply.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode(errors="replace")

    def get(self, path: str) -> tuple[int, str]:
        return self._open(urllib.request.Request(self.base + path))

    def post(
        self, path: str, data: dict[str, str] | None = None, **headers: str
    ) -> tuple[int, str]:
        body = urllib.parse.urlencode(data or {}).encode()
        request = urllib.request.Request(self.base + path, data=body, method="POST")
        request.add_header("X-CSRFToken", self.csrf)
        for name, value in headers.items():
            request.add_header(name.replace("_", "-"), value)
        return self._open(request)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DshwebServer]:
    home = tmp_path / "home"
    shutil.copytree(FIXTURE_HOMES / SESSION, home)
    running = DshwebServer(home=home, data_dir=tmp_path / "data")
    running.data_dir.mkdir()
    running.prepare()
    yield running
    running.stop()


def _requests(server: DshwebServer) -> list[tuple[str, str, str]]:
    sql = "select state, outcome, message from dashboard_compactionrequest order by id"
    return [(str(a), str(b), str(c)) for a, b, c in query_rows(server.data_dir, sql)]


def test_ten_compact_presses_at_once_each_get_an_answer(server: DshwebServer) -> None:
    server.start()
    browsers = [Browser(server.url) for _ in range(PRESSES)]
    url = f"/homes/local/sessions/{SESSION}/compact/"
    for _round in range(3):
        with ThreadPoolExecutor(PRESSES) as pool:
            answers = list(pool.map(lambda b: b.post(url, HX_Request="true"), browsers))
        # No content: the form swaps nothing, the status line comes over the socket.
        assert [status for status, _ in answers] == [204] * PRESSES, server.output(40)
    assert "database is locked" not in server.output()
    page = browsers[0].get(f"/homes/local/sessions/{SESSION}/")[1]
    assert re.search(r'id="compact-status" [^>]*data-state="(requested|failed)"', page)


def test_a_request_a_killed_server_left_in_flight_is_closed_when_it_starts(
    server: DshwebServer,
) -> None:
    engine = socket.create_server(("127.0.0.1", 0))  # accepts, never answers: stays in flight
    try:
        port = engine.getsockname()[1]
        server.extra_env["DSHWEB_ENGINE_URL"] = f"http://127.0.0.1:{port}/?token=t"
        server.start()
        status, _ = Browser(server.url).post(
            f"/homes/local/sessions/{SESSION}/compact/", HX_Request="true"
        )
        assert status == 204
        assert [state for state, _, _ in _requests(server)] == ["requested"]
        assert server.process is not None
        server.process.kill()  # a crash: no clean-up runs
        server.process.wait()
        server.process = None
        server.start()
        state, outcome, message = _requests(server)[0]
        assert (state, outcome) == ("failed", "abandoned")
        assert message.startswith("dshweb stopped while this ran")
        page = Browser(server.url).get(f"/homes/local/sessions/{SESSION}/")[1]
        assert 'data-state="failed"' in page and "dshweb stopped while this ran" in page
    finally:
        engine.close()


class _Form(html.parser.HTMLParser):
    """The values a browser would submit for the page's form with the ``sha256`` field."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        name = a.get("name", "")
        if tag == "input" and name and "disabled" not in a:
            if a.get("type") not in ("checkbox", "radio"):
                self.values[name] = a.get("value", "")
            elif "checked" in a:
                self.values[name] = a.get("value", "on")
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select and ("selected" in a):
            self.values[self._select] = a.get("value", "")
        elif tag == "textarea" and name:
            self._textarea = name
            self.values[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        if tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.values[self._textarea] += data


def test_concurrent_saves_of_one_profile_lose_no_update(server: DshwebServer) -> None:
    server.start()
    browsers = [Browser(server.url) for _ in range(PRESSES)]
    url = "/settings/sdk/context-truth/"
    patch = server.home / "profiles" / "sdk" / "cordis.patch.yml"
    for round_ in range(2):
        form = _Form()
        form.feed(browsers[0].get(url)[1])
        assert "sha256" in form.values and "quantumPercent" in form.values
        values = [str(40 + round_ * PRESSES + i) for i in range(PRESSES)]

        form.values.pop("csrfmiddlewaretoken")  # each browser sends its own (a header)
        sent = [form.values | {"quantumPercent": value} for value in values]
        with ThreadPoolExecutor(PRESSES) as pool:
            answers = list(pool.map(lambda b, data: b.post(url, data), browsers, sent))
        saved = [i for i, (_, page) in enumerate(answers) if "Saved context-truth" in page]
        assert all(status == 200 for status, _ in answers), server.output(40)
        assert len(saved) == 1, f"round {round_}: {len(saved)} saves answered Saved: " + str(
            [re.findall(r"errorlist[^<]*<li>([^<]*)|conflict", page) for _, page in answers]
        )
        assert f"quantumPercent: {values[saved[0]]}\n" in patch.read_text()
