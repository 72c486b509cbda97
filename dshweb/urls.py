"""URL map: the dashboard at ``/``, sign in and out at ``/accounts/``, admin at ``/admin/``."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from dshweb.accounts.forms import ThrottledAdminAuthenticationForm

# The admin's own sign-in page is throttled like ours.
admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("dshweb.accounts.urls")),
    path("", include("dshweb.dashboard.urls")),
]
