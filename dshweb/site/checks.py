"""System checks of the install, each with a hint to the command that fixes it.

- ``dshweb.E001`` (a database check: ``migrate`` runs it): the data folder, where SQLite
  keeps the database, does not exist yet.
- ``dshweb.W001``: no secret key is kept yet, so this process signs sign-ins with a random
  key of its own (:mod:`dshweb.secret_key`).
- ``dshweb.E002``: the key file cannot be read as a key (a FIFO, a link, too big, empty).

``manage.py dshweb_bootstrap`` (``scripts/start`` runs it on every start) answers both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.checks import Warning as CheckWarning

from dshweb.config import get_config
from dshweb.secret_key import read_secret_key
from dshweb.setting_errors import ConfigurationError

BOOTSTRAP_HINT = "Run 'python manage.py dshweb_bootstrap' (scripts/start does)."


@register(Tags.database)
def check_data_folder(
    app_configs: Sequence[AppConfig] | None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[CheckMessage]:
    folder = get_config().data_dir
    if not databases or folder.is_dir():
        return []
    return [
        Error(
            f"dshweb's data folder {folder} does not exist, so SQLite cannot make the database",
            hint=f"{BOOTSTRAP_HINT} It makes the folder private to you, then the database.",
            id="dshweb.E001",
        )
    ]


@register()
def check_secret_key(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[CheckMessage]:
    path = get_config().secret_key_path
    try:
        if path is None or read_secret_key(path) is not None:
            return []
    except ConfigurationError as refused:  # settings.py refuses it already: doctor's case
        return [Error(refused.problem, hint=refused.fix, id="dshweb.E002")]
    return [
        CheckWarning(
            f"no secret key in {path} yet: this process signs sign-ins with a random key "
            "of its own, which ends with it",
            hint=f"{BOOTSTRAP_HINT} It keeps a key there; or set DSHWEB_SECRET_KEY.",
            id="dshweb.W001",
        )
    ]
