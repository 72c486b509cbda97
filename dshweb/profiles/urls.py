"""The settings editor's pages: a profile's rows, preview, history and restore; the same
pages of a collected home under ``/homes/<home>/``, answered by its collector
(:mod:`dshweb.profiles.remote`)."""

from __future__ import annotations

from django.urls import path

from dshweb.profiles import remote, views

PAGES = [
    ("", views.settings_index, "settings"),
    ("revisions/<int:revision_id>/restore/", views.settings_restore, "settings-restore"),
    ("<str:profile>/history/", views.settings_history, "settings-history"),
    ("<str:profile>/preview/", views.settings_preview, "settings-preview"),
    ("<str:profile>/<str:section>/replay/", views.settings_replay, "settings-replay"),
    ("<str:profile>/<str:section>/", views.settings_row, "settings-row"),
]

urlpatterns = [
    path("homes/<home:home>/settings/engine/", remote.collected_engine),
    *(path(f"settings/{route}", view, name=name) for route, view, name in PAGES),
    *(
        path(f"homes/<home:home>/settings/{route}", view, name=None if route else "home-settings")
        for route, view, _ in PAGES
    ),
]
