"""``/accounts/``: sign in and out only (no password reset: dshweb sends no mail)."""

from __future__ import annotations

from django.contrib.auth.views import LogoutView
from django.urls import path

from dshweb.accounts.views import ThrottledLoginView

urlpatterns = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", LogoutView.as_view(), name="logout"),
]
