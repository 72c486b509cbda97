"""``/accounts/``: sign in and out only (no password reset: dshweb sends no mail); and a
user's API tokens (:data:`token_urlpatterns`, among the dashboard's pages)."""

from __future__ import annotations

from django.contrib.auth.views import LogoutView
from django.urls import path

from dshweb.accounts import token_views
from dshweb.accounts.views import ThrottledLoginView

urlpatterns = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", LogoutView.as_view(), name="logout"),
]

token_urlpatterns = [
    path("tokens/", token_views.api_tokens, name="api-tokens"),
    path("tokens/<int:token_id>/revoke/", token_views.api_token_revoke, name="api-token-revoke"),
]
