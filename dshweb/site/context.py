"""Template context shared by every page: the homes shown, and whether this process's own
home is the demo."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from dshweb.collect.shown import shown_homes
from dshweb.live.service import collecting, own_home


def dsh_home(request: HttpRequest) -> dict[str, object]:
    if not collecting():
        return {
            # Read now, on every page: while the store is down, even the sign-in page says so.
            "homes": shown_homes(),
            "collected": True,
            "dsh_home_is_demo": False,
        }
    home = own_home()
    return {
        # Lazy: the sign-in page names no home, and reading it would start the hub.
        "homes": SimpleLazyObject(lambda: shown_homes(wait=0)),
        "collected": False,
        "dsh_home_is_demo": home.is_demo,
    }
