"""The sessions' pages: the list, a session's page and its downloads. A session's pages
live under its home's name and its id; a session id may hold any character DSH allows,
even ``/``."""

from __future__ import annotations

from django.urls import path

from dshweb.sessions import exports, step_exports, views

SESSION = "homes/<home:home>/sessions/<path:session_id>/"

urlpatterns = [
    path("", views.session_list, name="session-list"),
    path("progress/", views.fold_progress, name="fold-progress"),
    path("cost/", views.cost, name="cost"),
    path(f"{SESSION}compact/", views.session_compact, name="session-compact"),
    # Names with a dot: a session page's address always ends in "/", so none is shadowed.
    path(f"{SESSION}ledger.html", exports.session_ledger, name="session-ledger"),
    path(f"{SESSION}ledger.csv", exports.ledger_csv, name="session-ledger-csv"),
    path(f"{SESSION}ledger.json", exports.ledger_json, name="session-ledger-json"),
    path(f"{SESSION}steps.csv", step_exports.steps_csv, name="session-steps-csv"),
    path(f"{SESSION}steps.json", step_exports.steps_json, name="session-steps-json"),
    path(f"{SESSION}timeline.csv", exports.timeline_csv, name="session-timeline-csv"),
    path(f"{SESSION}timeline.json", exports.timeline_json, name="session-timeline-json"),
    path(SESSION, views.session_detail, name="session-detail"),
    # An address without the home (older links): the session in the one home that has it.
    path("sessions/<path:session_id>/", views.session_in_any_home, name="session-any-home"),
]
