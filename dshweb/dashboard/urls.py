"""The dashboard's pages. A session's pages live under its home's name and its id; a session
id may hold any character DSH allows, even ``/``."""

from __future__ import annotations

from django.urls import path

from dshweb.dashboard import (
    alerts_views,
    converters,  # noqa: F401  (registers <home:…>)
    exports,
    remote_settings,
    settings_views,
    step_exports,
    token_views,
    views,
)

SESSION = "homes/<home:home>/sessions/<path:session_id>/"

app_name = "dashboard"
urlpatterns = [
    path("", views.session_list, name="session-list"),
    path("progress/", views.fold_progress, name="fold-progress"),
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
    # A collected home's settings: answered by its collector (dashboard/remote_settings.py).
    path("homes/<home:home>/settings/", remote_settings.home_settings, name="home-settings"),
    path("homes/<home:home>/settings/<path:rest>", remote_settings.home_settings),
    path("tokens/", token_views.api_tokens, name="api-tokens"),
    path("tokens/<int:token_id>/revoke/", token_views.api_token_revoke, name="api-token-revoke"),
    path("alerts/", alerts_views.alerts_index, name="alerts"),
    path("alerts/new/", alerts_views.alert_new, name="alert-new"),
    path("alerts/<int:rule_id>/", alerts_views.alert_rule, name="alert-rule"),
    path("alerts/<int:rule_id>/secret/", alerts_views.alert_secret, name="alert-secret"),
    path("alerts/<int:rule_id>/delete/", alerts_views.alert_delete, name="alert-delete"),
    path("settings/", settings_views.settings_index, name="settings"),
    path("settings/engine/", settings_views.settings_dsh_web, name="settings-dsh-web"),
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
