"""Sign-in, its throttle, and personal API tokens."""

from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "dshweb.accounts"
    label = "accounts"
    verbose_name = "Accounts"
