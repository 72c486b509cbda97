"""What may end a sign-in, told to the user's open sockets (:mod:`dshweb.accounts.socket_logins`).

- A sign-out (``user_logged_out``): the socket of that very session closes at once. The
  signal comes before Django ends the session, so the message names the session (hashed)
  rather than leave the socket to find it still there.
- A user saved (made inactive, a new password, anything an admin changes) or deleted: each
  of their sockets checks its sign-in again, once the change is committed. A new user, or a
  save of the last sign-in's time alone (every sign-in's), says nothing.

Staff status, permissions and groups gate pages and posts (Settings, Compact), never what
a socket sends: a socket's one condition is its sign-in, so they are not watched here.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.http import HttpRequest

from dshweb.accounts.socket_logins import tell_sockets
from dshweb.live.protocol import signed_out_name

QUIET_FIELDS = frozenset({"last_login"})
"""A save of only these fields changes no sign-in (``update_last_login``'s)."""


def _signed_out(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    if user is None or user.pk is None:
        return
    key = request.session.session_key
    tell_sockets(user.pk, ended=signed_out_name(key) if key else "")


def _saved(
    sender: Any, instance: Any, created: bool = False, update_fields: Any = None, **kwargs: Any
) -> None:
    if created or (update_fields is not None and frozenset(update_fields) <= QUIET_FIELDS):
        return  # a new user has no socket yet
    user_id = instance.pk
    transaction.on_commit(lambda: tell_sockets(user_id))


def _deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    user_id = instance.pk
    transaction.on_commit(lambda: tell_sockets(user_id))


def connect_signals() -> None:
    """Listen (the app's ``ready()``)."""
    users = get_user_model()
    user_logged_out.connect(_signed_out, dispatch_uid="dshweb-sockets-signed-out")
    post_save.connect(_saved, sender=users, dispatch_uid="dshweb-sockets-user-saved")
    post_delete.connect(_deleted, sender=users, dispatch_uid="dshweb-sockets-user-deleted")
