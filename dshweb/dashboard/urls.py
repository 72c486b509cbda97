"""The dashboard's pages; a session id may hold any character DSH allows, even ``/``."""

from __future__ import annotations

from django.urls import path

from dshweb.dashboard import settings_views, views

app_name = "dashboard"
urlpatterns = [
    path("", views.session_list, name="session-list"),
    path("progress/", views.fold_progress, name="fold-progress"),
    path("sessions/<path:session_id>/compact/", views.session_compact, name="session-compact"),
    path("sessions/<path:session_id>/", views.session_detail, name="session-detail"),
    path("settings/", settings_views.settings_index, name="settings"),
    path("settings/engine/", settings_views.settings_engine, name="settings-engine"),
    path(
        "settings/revisions/<int:revision_id>/restore/",
        settings_views.settings_restore,
        name="settings-restore",
    ),
    path(
        "settings/<str:profile>/history/", settings_views.settings_history, name="settings-history"
    ),
    path(
        "settings/<str:profile>/preview/", settings_views.settings_preview, name="settings-preview"
    ),
    path("settings/<str:profile>/<str:section>/", settings_views.settings_row, name="settings-row"),
]
