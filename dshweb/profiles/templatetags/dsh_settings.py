"""``{% settings_url 'settings-row' profile section %}``: a settings page's address, under its
home's (``/homes/<home>/settings/…``) when the page shows a collected home's settings
(``settings_home`` in its context, :meth:`dshweb.profiles.remote.Place.url`)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

register = template.Library()


@register.simple_tag(takes_context=True)
def settings_url(context: template.Context, name: str, *args: Any) -> str:
    home = context.get("settings_home")
    return home.url(name, *args) if home else reverse(f"dashboard:{name}", args=args)
