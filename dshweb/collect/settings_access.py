"""Who may open a settings page: staff only, since settings change what DSH runs; and a
home's settings are its own machine's business, so a web worker lists the collected
homes instead (each home's settings are answered by its collector)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from dshweb.collect.shown import shown_homes
from dshweb.live.service import collecting

View = Callable[..., HttpResponse]


def staff_only(view: View) -> View:
    """Settings change what DSH runs: only staff may see or save them."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied(_("Only staff users may change DSH settings."))
        if not collecting():  # the profiles live in each home, on its collector's machine
            homes = [home for home in shown_homes().shown if home.collected]
            return render(request, "settings/homes.html", {"collected_homes": homes})
        return view(request, *args, **kwargs)

    return wrapper
