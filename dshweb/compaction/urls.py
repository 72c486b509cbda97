"""Settings → Engine: which ``dsh web`` the Compact button asks."""

from __future__ import annotations

from django.urls import path

from dshweb.compaction import views

urlpatterns = [
    path("settings/engine/", views.settings_dsh_web, name="settings-dsh-web"),
]
