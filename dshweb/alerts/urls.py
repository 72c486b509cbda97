"""The alert rules' pages."""

from __future__ import annotations

from django.urls import path

from dshweb.alerts import views

urlpatterns = [
    path("alerts/", views.alerts_index, name="alerts"),
    path("alerts/new/", views.alert_new, name="alert-new"),
    path("alerts/<int:rule_id>/", views.alert_rule, name="alert-rule"),
    path("alerts/<int:rule_id>/secret/", views.alert_secret, name="alert-secret"),
    path("alerts/<int:rule_id>/delete/", views.alert_delete, name="alert-delete"),
]
