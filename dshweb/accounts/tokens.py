"""Personal API tokens: made and revoked by their user, shown once, kept as a SHA-256.

A token is ``dshweb_`` and 40 random URL-safe characters; the row keeps its digest and
its first characters (to tell tokens apart on the page), never the token. A request with
``Authorization: Bearer <token>`` acts as the token's user while the token is not revoked
and the user is active. Its last use is recorded at most once a minute (a scraper's every
request is no write).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer, SessionAuth

from dshweb.accounts.models import ApiToken

PREFIX = "dshweb_"
SHOWN = len(PREFIX) + 6
"""Characters of a token its page shows (the prefix and six more)."""
TOUCH_EVERY = timedelta(minutes=1)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new token of ``user``: its row, and the token (to show this once)."""
    token = PREFIX + secrets.token_urlsafe(30)
    row = ApiToken.objects.create(user=user, name=name, prefix=token[:SHOWN], digest=digest(token))
    return row, token


def token_user(token: str) -> User | None:
    """The active user of an unrevoked ``token``, its use recorded; else ``None``."""
    if not token.startswith(PREFIX):
        return None
    row = (
        ApiToken.objects.select_related("user")
        .filter(digest=digest(token), revoked_at=None, user__is_active=True)
        .first()
    )
    if row is None:
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user


def _bearer(request: HttpRequest) -> str | None:
    """The token of the request's ``Authorization: Bearer`` header, if it has one."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _stale_session(request: HttpRequest) -> bool:
    """The request presents a session cookie that signs no one in."""
    user = getattr(request, "user", None)
    return settings.SESSION_COOKIE_NAME in request.COOKIES and not (
        user is not None and user.is_authenticated
    )


class BearerToken(HttpBearer):
    """django-ninja's bearer scheme, by a personal token. A request that also presents
    a session cookie signing no one in is refused: every credential presented must hold."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        if _stale_session(request):
            return None
        user = token_user(token)
        if user is not None:
            request.user = user
        return user


class BrowserSession(SessionAuth):
    """The browser's session (django-ninja's), unless the request also presents a bearer
    token that does not hold: every credential presented must hold."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        token = _bearer(request)
        if token is not None and token_user(token) is None:
            return None
        return super().authenticate(request, key)
