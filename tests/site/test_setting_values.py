"""The shapes a setting's value may have (dshweb/setting_values.py, dshweb/environment_server.py):
what a person may mean is accepted, what no one could mean is refused with the reason."""

from __future__ import annotations

import pytest

from dshweb import environment_server
from dshweb.setting_errors import ConfigurationError, ConfigurationErrors, Reading, lines
from dshweb.setting_values import (
    host_problem,
    mail_address_problem,
    mail_domain_problem,
    port_problem,
    web_address_problem,
)

ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", "dsh.example.com", ".example.com", "*"]


@pytest.mark.parametrize("host", ALLOWED_HOSTS)
def test_a_host_django_can_compare_is_accepted(host: str) -> None:
    assert host_problem(host, django=True) is None


@pytest.mark.parametrize(
    ("host", "says"),
    [
        ("https://dsh.example.com", "is a web address, not a host"),
        ("dsh.example.com/dash", "is a web address, not a host"),
        ("dsh.example.com:8000", "has a port"),
        ("::1", "without its brackets: write [::1]"),
        ("[1.2.3.4]", "is not an IPv6 address"),
        ("my host", "is not a host name"),
        ("a..b", "is not a host name"),
    ],
)
def test_a_host_django_would_never_match_is_refused(host: str, says: str) -> None:
    assert says in (host_problem(host, django=True) or "")


def test_a_webhook_host_may_be_an_ipv6_address_without_brackets() -> None:
    assert host_problem("::1") is None and host_problem("relay.internal") is None
    assert host_problem("*") == "is not a host name"  # Django's wildcard means nothing there


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://dsh.example.com", None),
        ("http://127.0.0.1:8000/dash", None),
        ("https://[::1]:8443", None),
        ("dsh.example.com", "is not a web address: write it as https://host[:port]"),
        ("ftp://dsh.example.com", "is not a web address: write it as https://host[:port]"),
        ("https://dsh.example.com:99999", "is not a web address: its host or port cannot be read"),
        (
            "https://u:secret@dsh.example.com",
            "is not a web address: write it as https://host[:port]",
        ),
        ("https://dsh.example.com/?next=x", "has more than scheme://host[:port]/path"),
    ],
)
def test_a_web_address(url: str, problem: str | None) -> None:
    assert web_address_problem(url) == problem


def test_ports_addresses_and_domains() -> None:
    assert [port_problem(p) for p in ("1", "25", "65535")] == [None] * 3
    assert {port_problem(p) for p in ("0", "65536", "smtp", "-1", "２５")} == {
        "is not a port (1 to 65535)"
    }
    for good in ("dshweb@localhost", "dshweb <dshweb@example.com>", "ops@mail.example.com"):
        assert mail_address_problem(good) is None, good
    for bad in ("not an address", "a@b, c@d", "@example.com", "dshweb@"):
        assert mail_address_problem(bad) == "is not a mail address (dshweb@example.com)", bad
    assert mail_domain_problem("example.com") is None
    assert mail_domain_problem("ops@example.com") == (
        "is an address: write its domain alone (example.com)"
    )


def test_the_mail_settings_are_read_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSHWEB_EMAIL_PORT", "587")
    monkeypatch.setenv("DSHWEB_EMAIL_TLS", "1")
    monkeypatch.setenv("DSHWEB_EMAIL_FROM", "dshweb <dshweb@example.com>")
    mail = environment_server.mail()
    assert (mail.port, mail.use_tls, mail.sender) == (587, True, "dshweb <dshweb@example.com>")
    monkeypatch.setenv("DSHWEB_EMAIL_PORT", "smtp")
    monkeypatch.setenv("DSHWEB_EMAIL_TLS", "yes")
    with pytest.raises(ConfigurationErrors) as refused:
        environment_server.mail()
    assert [e.setting for e in refused.value.errors] == ["DSHWEB_EMAIL_PORT", "DSHWEB_EMAIL_TLS"]
    assert lines(refused.value) == [
        "dshweb: DSHWEB_EMAIL_PORT: 'smtp' is not a port (1 to 65535)",
        "dshweb: DSHWEB_EMAIL_TLS: 'yes' is neither 1 (on) nor 0 (off)",
    ]


def test_a_launch_url_is_checked_without_showing_its_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DSHWEB_ENGINE_URL", "http://127.0.0.1:7345/?token=abc")
    assert environment_server.engine_url() == "http://127.0.0.1:7345/?token=abc"
    monkeypatch.setenv("DSHWEB_ENGINE_URL", "http://10.0.0.5:7345/?token=s3cret")
    with pytest.raises(ConfigurationError) as refused:
        environment_server.engine_url()
    assert "must be loopback" in str(refused.value) and "s3cret" not in str(refused.value)


def test_a_reading_keeps_every_refusal_and_the_fallback() -> None:
    read = Reading()

    def bad(name: str) -> str:
        raise ConfigurationError(name, "is wrong", "fix it")

    assert read(lambda: "given", "fallback") == "given"
    assert read(lambda: bad("A"), "fallback") == "fallback"
    assert read(lambda: bad("B"), "two") == "two"
    assert read.refused("A") and not read.refused("C")
    with pytest.raises(ConfigurationErrors) as refused:
        read.done()
    assert str(refused.value) == "A: is wrong; fix it\nB: is wrong; fix it"
    single = Reading()
    single(lambda: bad("A"), None)
    with pytest.raises(ConfigurationError) as one:
        single.done()
    assert type(one.value) is ConfigurationError
