"""Template context shared by every page: which DSH home is shown, and whether it is the
demo; in a web worker, the collected home's name and whether its collector is online."""

from __future__ import annotations

from django.http import HttpRequest

from dshweb.live.service import collecting, shown_home
from dshweb.live.worker import worker_home


def dsh_home(request: HttpRequest) -> dict[str, object]:
    if not collecting():
        collected = worker_home()
        return {"dsh_home": collected.view.home, "dsh_home_is_demo": False, "collected": collected}
    home = shown_home()
    return {"dsh_home": home.path, "dsh_home_is_demo": home.is_demo, "collected": None}
