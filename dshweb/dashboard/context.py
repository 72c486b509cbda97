"""Template context shared by every page: which DSH home is shown, and whether it is the demo."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def dsh_home(request: HttpRequest) -> dict[str, object]:
    return {"dsh_home": settings.DSH_HOME, "dsh_home_is_demo": settings.DSH_HOME_IS_DEMO}
