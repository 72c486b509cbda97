"""Template context shared by every page: which DSH home is shown, and whether it is the demo."""

from __future__ import annotations

from django.http import HttpRequest

from dshweb.live.service import shown_home


def dsh_home(request: HttpRequest) -> dict[str, object]:
    home = shown_home()
    return {"dsh_home": home.path, "dsh_home_is_demo": home.is_demo}
