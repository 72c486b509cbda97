"""A home's name: how every page, address and command names a DSH home.

One dashboard shows the homes of one or more collectors, each by its name (``manage.py
dshweb_collect --name``; the embedded server's own is ``DSHWEB_HOME_NAME``, default
:data:`DEFAULT_HOME_NAME`). A session id is unique only within its home, so a session's
address holds its home's name: a name is short and plain, safe in a URL path segment, a
socket's path and a query string as it is.
"""

from __future__ import annotations

import re

DEFAULT_HOME_NAME = "local"
"""The name of the embedded server's own home when ``DSHWEB_HOME_NAME`` gives none."""
HOME_NAME_RE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
"""ASCII letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit, 64 at most."""
_WHOLE = re.compile(HOME_NAME_RE)


def home_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a home, or None when it can."""
    if _WHOLE.fullmatch(name) is not None:
        return None
    return (
        f"{name!r} is not a home name: use 1 to 64 ASCII letters, digits, '.', '_' or '-', "
        "starting with a letter or a digit (it is part of every session's address)"
    )
