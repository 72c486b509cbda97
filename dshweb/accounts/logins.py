"""Whether a socket's sign-in still holds, asked again while the socket is open.

A socket is signed in once, at its handshake, by Channels' ``get_user``: its session names
a user through a listed backend, the backend still lets that user sign in (Django's: the
user is active), and the session's auth hash is the user's current one (their password has
not changed since). :func:`logins_holding` asks the same of any number of sockets at once,
in two queries whatever their number (their sessions, their users), and changes nothing:
where a page load would flush a session whose hash no longer holds, this only says so. A
session that ended (signed out, expired, deleted, its key cycled) holds no one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from itertools import islice
from typing import Any

from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.base import SessionBase
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.utils import timezone
from django.utils.crypto import constant_time_compare

BATCH = 500
"""Keys per ``IN (…)`` of a query (SQLite before 3.32 takes 999 parameters at most)."""


@dataclass(frozen=True, slots=True)
class Login:
    """A socket's sign-in: its session's key and the user that session signed in."""

    session_key: str
    user_id: Any


def login_of(scope: Mapping[str, Any]) -> Login | None:
    """The sign-in of a socket's ``scope`` (after Channels' ``AuthMiddleware``), or None
    when it signs no one in."""
    user, session = scope.get("user"), scope.get("session")
    if user is None or not user.is_authenticated or session is None:
        return None
    key = session.session_key
    return Login(key, user.pk) if key else None


def logins_holding(logins: Collection[Login]) -> set[Login]:
    """Those of ``logins`` that still sign their user in, as a handshake would find."""
    sessions = _sessions({login.session_key for login in logins})
    users = _users({login.user_id for login in logins if login.session_key in sessions})
    hashes: dict[Any, str] = {}
    holding: set[Login] = set()
    for login in logins:
        data, user = sessions.get(login.session_key), users.get(login.user_id)
        if data is None or user is None or _user_key(data) != login.user_id:
            continue
        if not _may_sign_in(user, data.get(BACKEND_SESSION_KEY)):
            continue
        if hasattr(user, "get_session_auth_hash"):
            if login.user_id not in hashes:
                hashes[login.user_id] = user.get_session_auth_hash()
            stored = data.get(HASH_SESSION_KEY)
            if not stored or not constant_time_compare(stored, hashes[login.user_id]):
                continue
        holding.add(login)
    return holding


def _sessions(keys: Collection[str]) -> dict[str, dict[str, Any]]:
    """The data of each live (unexpired) session of ``keys``."""
    engine: type[SessionBase] = import_module(settings.SESSION_ENGINE).SessionStore
    found: dict[str, dict[str, Any]] = {}
    if issubclass(engine, DatabaseSessionStore):  # and cached_db: the database is the truth
        model = engine.get_model_class()
        now, decoder = timezone.now(), engine()
        for batch in _batches(keys):
            rows = model.objects.filter(session_key__in=batch, expire_date__gt=now)
            for key, text in rows.values_list("session_key", "session_data"):
                found[key] = decoder.decode(text)
        return found
    for key in keys:  # a cache or a signed cookie: one at a time, as a page load reads it
        store = engine(session_key=key)
        data = store.load()
        if store.session_key == key and data:
            found[key] = data
    return found


def _users(ids: Collection[Any]) -> dict[Any, Any]:
    model = get_user_model()
    users: dict[Any, Any] = {}
    for batch in _batches(ids):
        users.update((user.pk, user) for user in model._default_manager.filter(pk__in=batch))
    return users


def _user_key(data: Mapping[str, Any]) -> Any:
    """The user a session names, as Django's ``_get_user_session_key`` reads it."""
    try:
        return get_user_model()._meta.pk.to_python(data[SESSION_KEY])
    except (KeyError, ValueError, TypeError):
        return None


def _may_sign_in(user: Any, backend_path: Any) -> bool:
    """Whether the session's backend still lets ``user`` sign in (Channels' rule: the
    backend is listed, and its ``get_user`` finds them)."""
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return False
    backend = load_backend(backend_path)
    if isinstance(backend, ModelBackend) and type(backend).get_user is ModelBackend.get_user:
        return backend.user_can_authenticate(user)  # what its get_user asks, without a query
    return backend.get_user(user.pk) is not None


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    it = iter(items)
    while batch := list(islice(it, BATCH)):
        yield batch
