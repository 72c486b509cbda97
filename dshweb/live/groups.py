"""Channels group names: one for the sessions list, one per session (ids hashed: a group
name allows only a few ASCII characters and a session id may hold anything)."""

from __future__ import annotations

import hashlib

SESSIONS_GROUP = "dshweb.sessions"
MESSAGE_TYPE = "fragment.html"  # handled by the consumers' ``fragment_html``


def session_group(session_id: str) -> str:
    return "dshweb.session." + hashlib.sha256(session_id.encode()).hexdigest()[:32]


def fragment_message(html: str) -> dict[str, str]:
    return {"type": MESSAGE_TYPE, "html": html}
