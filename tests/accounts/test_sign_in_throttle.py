"""Signing in: failed sign-ins are throttled per username and address, and per address
(dshweb's page and the admin's alike), and there are no password-reset or password-change pages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.cache import cache
from django.http import HttpResponse
from django.test import Client
from django.test.utils import override_settings

from dshweb.accounts.forms import INVALID_LOGIN

GOOD = "right-horse-battery-9"
LIMIT = 3
THROTTLED = "Too many failed sign-ins"


@pytest.fixture(autouse=True)
def fast_throttle(settings: Any) -> Iterator[None]:
    settings.DSHWEB = {
        **settings.DSHWEB,
        "LOGIN_THROTTLE_FAILURES": LIMIT,
        "LOGIN_THROTTLE_SECONDS": 60,
    }
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def alice(db: None) -> User:
    User.objects.create_user("bob", password=GOOD)
    return User.objects.create_user("alice", password=GOOD, is_staff=True)


def _sign_in(
    password: str,
    *,
    username: str = "alice",
    address: str = "192.0.2.1",
    url: str = "",
    language: str = "en",
) -> HttpResponse:
    form = {"username": username, "password": password}
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    response = client.post(url or "/accounts/login/", form, REMOTE_ADDR=address)
    assert isinstance(response, HttpResponse)
    return response


def _fail(times: int, **where: str) -> None:
    for _ in range(times):
        response = _sign_in("wrong", **where)
        assert response.status_code == 200
        assert str(INVALID_LOGIN) in response.content.decode()


def test_failed_sign_ins_throttle_that_username_from_that_address(alice: User) -> None:
    _fail(LIMIT)
    refused = _sign_in(GOOD)  # the right password, during the cool-off
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert THROTTLED in refused.content.decode()
    assert "sessionid" not in refused.cookies  # not signed in
    assert _sign_in("wrong").status_code == 429  # still refused, the password not checked

    assert _sign_in(GOOD, address="192.0.2.2").status_code == 302  # another address
    assert _sign_in(GOOD, username="bob").status_code == 302  # another user
    assert _sign_in(GOOD, username="ALICE").status_code == 429  # one user, any case


def test_the_cool_off_ends_and_a_success_clears_the_count(alice: User, settings: Any) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "LOGIN_THROTTLE_SECONDS": 1}
    _fail(LIMIT)
    assert _sign_in(GOOD).status_code == 429
    time.sleep(1.2)
    assert _sign_in(GOOD).status_code == 302
    _fail(LIMIT - 1)
    assert _sign_in(GOOD).status_code == 302  # counting started again at the success
    _fail(LIMIT - 1)
    assert _sign_in(GOOD).status_code == 302


def test_spraying_usernames_from_one_address_throttles_that_address(
    alice: User, settings: Any
) -> None:
    settings.DSHWEB = {**settings.DSHWEB, "LOGIN_THROTTLE_ADDRESS_FAILURES": 4}
    for name in ("carol", "dave", "erin", "frank"):  # one try each: no pair reaches 3
        _fail(1, username=name)
    refused = _sign_in(GOOD)  # alice never failed, but this address did, 4 times
    assert refused.status_code == 429
    assert THROTTLED in refused.content.decode()
    assert _sign_in(GOOD, username="bob").status_code == 429
    assert _sign_in(GOOD, address="192.0.2.2").status_code == 302  # another address


def test_the_admin_sign_in_is_throttled_too(alice: User) -> None:
    _fail(LIMIT)  # on dshweb's page: the admin's counts the same failures
    refused = _sign_in(GOOD, url="/admin/login/")
    assert THROTTLED in refused.content.decode()
    assert "sessionid" not in refused.cookies  # not signed in
    assert _sign_in(GOOD, url="/admin/login/", address="192.0.2.9").status_code == 302


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_a_chinese_page_says_both_refusals_in_chinese(alice: User, url: str) -> None:
    """Asked for in Chinese, the sign-in page says a wrong password and a throttled
    sign-in in Chinese (the form's own errors), and none of their English."""
    wrong = _sign_in("wrong", url=url, language="zh-CN,zh;q=0.9").content.decode()
    assert '<html lang="zh-hans"' in wrong
    if url == "/accounts/login/":  # the admin's wrong-password words are Django's own
        assert "用户名与密码不匹配，请重试。" in wrong
    assert "do not match" not in wrong and "Please enter the correct" not in wrong
    _fail(LIMIT - 1)
    refused = _sign_in(GOOD, url=url, language="zh-CN,zh;q=0.9")
    page = refused.content.decode()
    assert "该用户名从你的地址登录失败次数过多，请 1 分钟后再试。" in page  # of 60 s
    assert "sessionid" not in refused.cookies
    assert "Too many failed sign-ins" not in page and "Try again" not in page


@pytest.mark.parametrize(
    "url",
    [
        "/accounts/password_reset/",
        "/accounts/password_reset/done/",
        "/accounts/reset/MQ/set-password/",
        "/accounts/reset/done/",
        "/accounts/password_change/",
        "/accounts/password_change/done/",
    ],
)
@override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend")
def test_no_password_reset_or_change_pages(alice: User, url: str) -> None:
    signed_in = Client()
    signed_in.force_login(alice)
    for client in (Client(), signed_in):
        assert client.get(url).status_code == 404
        assert client.post(url, {"email": "alice@example.invalid"}).status_code == 404
    assert mail.outbox == []
