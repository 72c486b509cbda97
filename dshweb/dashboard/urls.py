"""The dashboard's pages; a session id may hold any character DSH allows, even ``/``."""

from __future__ import annotations

from django.urls import path

from dshweb.dashboard import views

app_name = "dashboard"
urlpatterns = [
    path("", views.session_list, name="session-list"),
    path("sessions/<path:session_id>/", views.session_detail, name="session-detail"),
]
