"""The settings editor's pages: a profile's rows, preview, history and restore; a
collected home's settings are answered by its collector (:mod:`dshweb.profiles.remote`)."""

from __future__ import annotations

from django.urls import path

from dshweb.profiles import remote, views

urlpatterns = [
    path("homes/<home:home>/settings/", remote.home_settings, name="home-settings"),
    path("homes/<home:home>/settings/<path:rest>", remote.home_settings),
    path("settings/", views.settings_index, name="settings"),
    path(
        "settings/revisions/<int:revision_id>/restore/",
        views.settings_restore,
        name="settings-restore",
    ),
    path("settings/<str:profile>/history/", views.settings_history, name="settings-history"),
    path("settings/<str:profile>/preview/", views.settings_preview, name="settings-preview"),
    path("settings/<str:profile>/<str:section>/", views.settings_row, name="settings-row"),
]
