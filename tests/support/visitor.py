"""A signed-in person's HTTP client of one real dshweb server (a child process)."""

from __future__ import annotations

import http.cookiejar
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser

from tests.support.server import PASSWORD, USERNAME, DshwebServer

SIGN_IN_TRIES = 5
"""Sign-ins answered 503 "store unavailable" (with ``Retry-After``) are tried again."""


class Visitor:
    """A signed-in person's HTTP client of one server."""

    def __init__(
        self, server: DshwebServer, username: str = USERNAME, password: str = PASSWORD
    ) -> None:
        self.server = server
        self.jar = jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        login = f"{server.url}/accounts/login/"
        page = self.get("/accounts/login/")[1]
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert found, page[:500]
        form = {"username": username, "password": password, "csrfmiddlewaretoken": found[1]}
        data = urllib.parse.urlencode(form).encode()
        for attempt in range(SIGN_IN_TRIES):
            try:
                self.opener.open(urllib.request.Request(login, data=data), timeout=10).read()
                break
            except urllib.error.HTTPError as error:
                if any(cookie.name == "sessionid" for cookie in jar):
                    break  # signed in; the page it led to (a home not collected yet) failed
                # 503: a shared store did not answer this once (a loaded machine); the page
                # says to retry, as a person would.
                if error.code != 503 or attempt == SIGN_IN_TRIES - 1:
                    raise
                time.sleep(1.0)
        self.cookies = {cookie.name: cookie.value for cookie in jar}
        assert "sessionid" in self.cookies

    def post(self, path: str) -> tuple[int, str]:
        """POST ``path`` as the page's htmx form does (CSRF token in its header)."""
        request = urllib.request.Request(
            self.server.url + path,
            data=b"",
            headers={"X-CSRFToken": self.csrf_token(), "HX-Request": "true"},
        )
        try:
            with self.opener.open(request, timeout=10) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def csrf_token(self) -> str:
        self.get("/")
        token = next(cookie.value for cookie in self.jar if cookie.name == "csrftoken")
        assert token
        return token

    def get(self, path: str, *, timeout: float = 10.0) -> tuple[int, str]:
        """GET ``path``; ``timeout``: longer for a page that travels to a collector."""
        try:
            with self.opener.open(self.server.url + path, timeout=timeout) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def submit(self, path: str, fields: dict[str, str]) -> tuple[int, str, str]:
        """POST a form to ``path`` as a browser does, following the redirect: the status,
        the page and the address it ended on."""
        request = urllib.request.Request(
            self.server.url + path,
            data=urllib.parse.urlencode(fields).encode(),
            headers={"Referer": self.server.url + path},
        )
        try:
            with self.opener.open(request, timeout=60) as reply:
                return reply.status, reply.read().decode(), reply.url
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(), error.url


class _FormFields(HTMLParser):
    """The values a browser would post for the page's settings form, as shown."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None
        self._first: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        name = found.get("name", "")
        if tag == "input" and name:
            if found.get("type") in ("checkbox", "radio"):
                if "checked" in found:
                    self.values[name] = found.get("value", "on")
            else:
                self.values[name] = found.get("value", "")
        elif tag == "select":
            self._select = name
        elif tag == "option" and self._select:
            self._first.setdefault(self._select, found.get("value", ""))
            if "selected" in found:
                self.values[self._select] = found.get("value", "")
        elif tag == "textarea":
            self._textarea = name
            self.values[name] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self._select:
            self.values.setdefault(self._select, self._first.get(self._select, ""))
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.values[self._textarea] += data


def form_fields(html: str, form_id: str) -> dict[str, str]:
    """What a browser would post for the form of id ``form_id``, as the page shows it."""
    start = html.index(f'id="{form_id}"')
    parser = _FormFields()
    parser.feed(html[html.rindex("<form", 0, start) : html.index("</form>", start)])
    return parser.values
