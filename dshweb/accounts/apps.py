"""Sign-in, its throttle, and personal API tokens; open sockets follow their sign-in."""

from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "dshweb.accounts"
    label = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from dshweb.accounts.sign_outs import connect_signals

        connect_signals()
