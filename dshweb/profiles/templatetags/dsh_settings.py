"""``{% settings_url 'settings-row' profile section %}``: a settings page's address, under its
home's (``/homes/<home>/settings/…``) when the page is a collected home's, rendered by
that home's collector for a web worker (:mod:`dshweb.profiles.remote`)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from dshweb.profiles.remote import carried_home

register = template.Library()


@register.simple_tag(takes_context=True)
def settings_url(context: template.Context, name: str, *args: Any) -> str:
    url = reverse(f"dashboard:{name}", args=args)
    home = carried_home(context.get("request"))
    return f"/homes/{home}{url}" if home else url
