"""The dashboard's pages, one namespace (``dashboard:``) made of each feature app's own
list; the ``<home:…>`` converter they use is registered when the site app is ready."""

from __future__ import annotations

from dshweb.accounts.urls import token_urlpatterns
from dshweb.alerts import urls as alerts
from dshweb.compaction import urls as compaction
from dshweb.profiles import urls as profiles
from dshweb.sessions import urls as sessions

app_name = "dashboard"
urlpatterns = [
    *sessions.urlpatterns,
    *profiles.urlpatterns,
    *compaction.urlpatterns,
    *token_urlpatterns,
    *alerts.urlpatterns,
]
