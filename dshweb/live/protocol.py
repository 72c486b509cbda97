"""The channel protocol: every group name and every message type dshweb sends on the
channel layer, in one place.

Groups: the sessions list (:data:`SESSIONS_GROUP`), one per session of each home
(:func:`session_group`), one per user for alert notices (:func:`alerts_group`) and one per
user for changes to their sign-in (:func:`account_group`), one per collected home's
collector (:func:`collector_group`). A group name allows only a few
ASCII characters, so names and ids are hashed.

Messages (each a ``TypedDict``; its ``type`` names the consumer's handler, dots as
underscores): :class:`SessionChanged`, :class:`SessionsChanged`, :class:`CompactChanged`
(which carries the request's new state: a socket shows it without asking the database),
:class:`AlertFired` and :class:`AccountChanged` go to pages' sockets; the commands
:data:`COMPACT_RUN` and :data:`SETTINGS_REQUEST` go to a collector, sealed
(:mod:`dshweb.collect.commands`), and its :data:`COLLECTOR_ANSWER` comes back on the asker's
own channel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

SESSIONS_GROUP = "dshweb.sessions"

SESSION_CHANGED = "session.changed"
SESSIONS_CHANGED = "sessions.changed"
ACCOUNT_CHANGED = "account.changed"
COMPACT_RUN = "compact.run"
SETTINGS_REQUEST = "settings.request"
COLLECTOR_ANSWER = "collector.answer"


def _hashed(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def session_group(home: str, session_id: str) -> str:
    """The group of session ``session_id`` of home ``home`` (a home's name has no NUL)."""
    return "dshweb.session." + _hashed(f"{home}\0{session_id}")


def alerts_group(user_id: int) -> str:
    """The group every socket of one user joins, for their browser notifications."""
    return f"dshweb.alerts.{user_id}"


def account_group(user_id: int) -> str:
    """The group every socket of one user joins, told when their sign-in may have ended."""
    return f"dshweb.account.{user_id}"


def signed_out_name(session_key: str) -> str:
    """What :class:`AccountChanged` calls the session that signed out: its key hashed (a
    session key on the channel layer would be a login to whoever reads it)."""
    return _hashed("session\0" + session_key)


def collector_group(name: str) -> str:
    """The group of home ``name``'s collector."""
    return "dshweb.collector." + _hashed(name)


class SessionChanged(TypedDict):
    """A session of ``home`` changed (or is ``gone``); ``version``: the version of its
    home's view that shows the change."""

    type: Literal["session.changed"]
    home: str
    session_id: str
    gone: bool
    version: int


class SessionsChanged(TypedDict):
    """Sessions of the list changed: ``[home, id]`` pairs, and each home's version."""

    type: Literal["sessions.changed"]
    ids: list[list[str]]
    versions: dict[str, int]


class RequestState(TypedDict):
    """A Compact request's state as its status line reads it."""

    state: str
    outcome: str
    message: str
    seq_at_request: int


class CompactChanged(TypedDict):
    """The latest Compact request of a session changed; ``request`` is its new state."""

    type: Literal["compact.changed"]
    home: str
    session_id: str
    request: RequestState | None


class AlertFired(TypedDict):
    """A rule of the user fired: the notice's headline and the firing (as the API has it)."""

    type: Literal["alert.fired"]
    headline: str
    alert: dict[str, Any]


class AccountChanged(TypedDict):
    """Something of the user's account changed: a sign-out (``ended``: the session that
    ended, :func:`signed_out_name`), or the user saved or deleted (``ended`` empty). Each
    socket of theirs checks its sign-in again, and closes if it no longer holds."""

    type: Literal["account.changed"]
    ended: str


class SettingsQuestion(TypedDict):
    """A question about a collected home's settings: a verb of the settings protocol (a
    method of ``dshweb.profiles.pages.HomeSettings``) and its arguments by name, as
    ``dshweb.profiles.wire`` writes and reads them. The answer carries ``data`` (the
    method's record, as JSON-like), ``not_found`` or ``failed`` (a reason)."""

    type: Literal["settings.request"]
    verb: str
    arguments: dict[str, object]


def sent(message: Mapping[str, object]) -> dict[str, Any]:
    """``message`` (one of the types above) as the channel layer's API takes it."""
    return dict(message)
