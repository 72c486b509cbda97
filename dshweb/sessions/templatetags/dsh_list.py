"""Addresses of the sessions list for a query with some values changed: the pager's,
the count chips' and the list socket's (:mod:`dshweb.core.listing.query`)."""

from __future__ import annotations

from dataclasses import replace

from django import template

from dshweb.core.fold.gauge import Band
from dshweb.core.listing.query import ListQuery, SessionState
from dshweb.sessions import fragments

register = template.Library()


@register.simple_tag
def list_url(
    query: ListQuery, *, page: int = 1, band: str | None = None, state: str | None = None
) -> str:
    """``{% list_url query page=3 %}``: the list's address for ``query`` on another page
    (the first, unless told), or with another band or state (``""``: any)."""
    changed = replace(query, page=page)
    if band is not None:
        changed = replace(changed, band=Band(band) if band else None)
    if state is not None:
        changed = replace(changed, state=SessionState(state or SessionState.ALL))
    return fragments.list_url(changed)


@register.simple_tag
def list_socket_url(query: ListQuery) -> str:
    return fragments.list_socket_url(query)
