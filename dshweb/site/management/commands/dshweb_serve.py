"""``dshweb serve`` (``manage.py dshweb_serve``): prepare and serve the dashboard.

It runs ``dshweb_bootstrap`` (data folder, secret key, database, the first admin, whose
password is printed once), collects the static files, then serves with Daphne on
loopback. ``--home`` shows another DSH home than ``$DSH_HOME``; ``--open`` opens the
dashboard in the browser once it answers. An option it cannot use (a port that is none or
taken, an address this machine does not have, a home that is no folder) ends it before
anything is prepared, with one line naming the option and exit status 2
(:mod:`dshweb.setting_errors`).
"""

from __future__ import annotations

import errno
import os
import socket
import threading
import time
import webbrowser
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections

from dshweb import environment
from dshweb.config import get_config
from dshweb.core.fold.cost_settings import DEFAULT_PRICE_AS, NO_ALIASES, parse_aliases
from dshweb.dsh_web.launch_url import is_loopback
from dshweb.secret_key import read_secret_key
from dshweb.setting_errors import ConfigurationError
from dshweb.setting_values import port_problem

OPEN_WAIT = 30.0
"""How long ``--open`` waits for the server to answer before it gives up."""


def _override(variable: str, key: str, value: object) -> None:
    """An option's ``value`` instead of the setting ``key`` (``DSHWEB[key]``) and its
    environment ``variable``, in this process and its children."""
    os.environ[variable] = str(value)
    settings.DSHWEB = {**settings.DSHWEB, key: value}
    get_config.cache_clear()


def show_home(home: Path) -> None:
    """Show ``home`` instead of the configured DSH home (this process and its children)."""
    _override("DSH_HOME", "DSH_HOME", home)


def price_as(text: str) -> None:
    """Price models as ``text`` says (``--price-as``) instead of ``DSHWEB_PRICE_AS``."""
    try:
        parse_aliases(text)
    except ValueError as exc:
        raise ConfigurationError("--price-as", str(exc)) from None
    _override("DSHWEB_PRICE_AS", "PRICE_AS", text)


def sign_with_the_kept_key() -> None:
    """Sign with the key bootstrap keeps from the first start on: ``settings.py`` read the
    data folder before bootstrap made the key file, so a first start held a random key of
    its own, and at the next start every sign-in and fold checkpoint it made was refused."""
    path = get_config().secret_key_path  # None: DSHWEB_SECRET_KEY names the key
    kept = read_secret_key(path) if path is not None else None
    if kept is not None and kept != settings.SECRET_KEY:
        settings.SECRET_KEY = kept


def check_listen(host: str, port_text: str) -> int:
    """The port of ``--port``, once ``--host`` and it can be listened on (tried now: a port
    another server holds, an address this machine does not have, are refused at once)."""
    if (problem := port_problem(port_text)) is not None:
        raise ConfigurationError("--port", f"{port_text!r} {problem}")
    port = int(port_text)
    try:
        found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise ConfigurationError(
            "--host", f"{host!r} is not an address of this machine ({error})"
        ) from None
    family, kind, proto, _, address = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Daphne listens
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRNOTAVAIL:
                raise ConfigurationError(
                    "--host", f"{host!r} is not an address of this machine"
                ) from None
            what = (
                "is in use (another server listens there)"
                if error.errno == errno.EADDRINUSE
                else f"cannot be listened on: {error.strerror}"
            )
            raise ConfigurationError("--port", f"{host}:{port} {what}") from None
    return port


def _open_when_up(host: str, port: int, url: str) -> None:
    deadline = time.monotonic() + OPEN_WAIT
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host.strip("[]"), port), timeout=1):
                webbrowser.open(url)
                return
        except OSError:
            time.sleep(0.2)


class Command(BaseCommand):
    help = (
        "Prepare the data folder (private, secret key, database, first admin) and serve the "
        "dashboard with Daphne on loopback."
    )
    requires_system_checks = ()  # bootstrap fixes what the checks would warn about

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--home", type=Path, help="the DSH home to show (default: $DSH_HOME, else ~/.dsh)"
        )
        parser.add_argument(
            "--host",
            default="127.0.0.1",
            help="address to listen on (default %(default)s: this machine only)",
        )
        parser.add_argument("--port", default="8000", help="default %(default)s")
        parser.add_argument("--open", action="store_true", help="open the dashboard in the browser")
        parser.add_argument(
            "--price-as",
            help="price models the dsh-llm-cost registry does not list as one it does, "
            f"model=registry-model,… or {NO_ALIASES} (default: $DSHWEB_PRICE_AS, else "
            f"{DEFAULT_PRICE_AS}: DSH's own model)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host: str = options["host"]
        port = check_listen(host, str(options["port"]))
        if options["home"] is not None:
            home = options["home"].expanduser().resolve()
            if not home.is_dir():
                raise ConfigurationError("--home", f"{home} is not a folder")
            show_home(home)
        if options["price_as"] is not None:
            price_as(options["price_as"])
        verbosity = options["verbosity"]
        call_command("dshweb_bootstrap", verbosity=verbosity, stdout=self.stdout)
        sign_with_the_kept_key()
        call_command("collectstatic", interactive=False, verbosity=0)
        connections.close_all()  # the server opens its own, in its own threads
        if not is_loopback(host):
            self.stderr.write(
                f"dshweb: listening on {host}: other machines can reach the sign-in page. "
                "Serve it over HTTPS (docs/https.md) and list its names in "
                "DSHWEB_ALLOWED_HOSTS."
            )
        shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
        url = f"http://{shown}:{port}/"
        config = get_config()
        if config.behind_tls_proxy:
            # dshweb takes the client's address from X-Forwarded-For itself, and only from
            # DSHWEB_TRUSTED_PROXIES (not Daphne's --proxy-headers, which believes anyone).
            self.stdout.write(f"dshweb: behind a TLS proxy; it forwards to {url}")
        else:
            self.stdout.write(f"dshweb: {url}")
        choice = environment.home_choice(
            config.dsh_home, demo=config.demo, data_dir=config.data_dir, prepare=False
        )
        if choice.is_demo:
            self.stdout.write(environment.demo_notice(config.dsh_home))
        else:
            self.stdout.write(f"dshweb: showing the DSH home {config.dsh_home}")
        self.stdout.flush()
        if options["open"]:
            threading.Thread(
                target=_open_when_up, args=(host, port, url), name="open-browser", daemon=True
            ).start()
        from daphne.cli import CommandLineInterface  # Twisted's reactor: only to serve

        CommandLineInterface().run(
            ["--bind", host.strip("[]"), "--port", str(port), "dshweb.asgi:application"]
        )
