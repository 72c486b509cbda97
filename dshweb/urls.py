"""URL map: the dashboard at ``/``, sign in and out at ``/accounts/``, the language switch at
``/i18n/setlang/``, the JSON API at ``/api/v1/``, admin at ``/admin/``."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.i18n import set_language

from dshweb.accounts.forms import ThrottledAdminAuthenticationForm
from dshweb.api.docs import api_docs
from dshweb.api.metrics import metrics
from dshweb.api.v1 import api_urls

# The admin's own sign-in page is throttled like ours.
admin.site.login_form = ThrottledAdminAuthenticationForm

# A database that cannot be reached is a 503 "store unavailable" page, not a 500.
handler500 = "dshweb.live.unavailable.server_error"
# The API's unknown paths answer in its JSON, the site's with its page.
handler404 = "dshweb.api.v1.not_found"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("dshweb.accounts.urls")),
    # The language switch (POST, CSRF-checked; also on the sign-in page): a cookie, then
    # back to the page it was on.
    path("i18n/setlang/", login_not_required(set_language), name="set_language"),
    path("api/v1/docs", api_docs, name="api-docs"),  # a page of the site, not Swagger's
    path("api/v1/", include(*api_urls())),
    path("metrics", metrics),
    path("", include("dshweb.site.urls")),
]
