"""The ``<home:…>`` path converter: a home's name in a page's or a socket's address."""

from __future__ import annotations

from django.urls import register_converter

from dshweb.core.listing.homes import HOME_NAME_RE


class HomeNameConverter:
    """A home's name (:mod:`dshweb.core.listing.homes`), as it is."""

    regex = HOME_NAME_RE

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(HomeNameConverter, "home")
