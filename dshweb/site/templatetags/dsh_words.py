"""``{% load dsh_words %}``: DSH's own words (bands, context parts, compaction kinds) and the
problems dshweb says by a code (``|said``) as a person reads them, in the page's language
(:mod:`dshweb.words`), for the templates of every app (each extends this app's
``base.html``)."""

from __future__ import annotations

from django import template

from dshweb.words import BANDS, COMPACTION_KINDS, ENGINE_CHECKS, PARTS, named, said

register = template.Library()


@register.filter
def band_name(band: object) -> str:
    """``{{ gauge.band|band_name }}``: the band as a person reads it, in the page's language."""
    return named(BANDS, band)


@register.filter
def part_name(part: object) -> str:
    """``{{ part.kind|part_name }}``: system, tools or messages, in the page's language."""
    return named(PARTS, part)


@register.filter(name="said")
def said_filter(text: object) -> str | list[str]:
    """``{{ error|said }}``: a problem dshweb said (:mod:`dshweb.core.said`) in the page's
    language; of a list of them (``{{ session.errors|said|join:"; " }}``), each."""
    if isinstance(text, list | tuple):
        return [said(each) for each in text]
    return said(text)


@register.filter
def engine_check_name(status: object) -> str:
    """``{{ check.status|engine_check_name }}``: what a test of the engine found."""
    return named(ENGINE_CHECKS, status)


@register.filter
def compaction_kind_name(kind: object) -> str:
    """``{{ compaction.kind|compaction_kind_name }}``: automatic, manual, overflow or prune,
    translated."""
    return named(COMPACTION_KINDS, kind)
