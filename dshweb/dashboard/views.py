"""Server-rendered pages (placeholder until the pages land)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def session_list(request: HttpRequest) -> HttpResponse:
    return HttpResponse("dshweb")


def session_detail(request: HttpRequest, session_id: str) -> HttpResponse:
    return HttpResponse(session_id)
