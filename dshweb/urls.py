"""URL map: the dashboard at ``/``, Django's login at ``/accounts/``, admin at ``/admin/``."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("dshweb.dashboard.urls")),
]
