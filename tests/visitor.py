"""A signed-in person's HTTP client of one real dshweb server (a child process)."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request

from tests.browser.server import PASSWORD, USERNAME, DshwebServer


class Visitor:
    """A signed-in person's HTTP client of one server."""

    def __init__(self, server: DshwebServer) -> None:
        self.server = server
        self.jar = jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        login = f"{server.url}/accounts/login/"
        page = self.get("/accounts/login/")[1]
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert found, page[:500]
        form = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": found[1]}
        data = urllib.parse.urlencode(form).encode()
        self.opener.open(urllib.request.Request(login, data=data), timeout=10).read()
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

    def get(self, path: str) -> tuple[int, str]:
        try:
            with self.opener.open(self.server.url + path, timeout=10) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()
