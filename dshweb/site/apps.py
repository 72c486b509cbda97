from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.apps import AppConfig
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from dshweb.private_data import make_file_private

log = logging.getLogger(__name__)


class SiteConfig(AppConfig):
    """What every page shares: checks, middleware, error pages, the URL and socket maps.
    Its label stays ``dashboard``: its migrations are the first history of the tables the
    feature apps now own (each model moved without touching data)."""

    name = "dshweb.site"
    label = "dashboard"
    verbose_name = "DSH dashboard"

    def ready(self) -> None:
        from dshweb.site import checks, converters  # noqa: F401  (register themselves)

        connection_created.connect(_private_database, dispatch_uid="dshweb-private-database")


def _private_database(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """SQLite creates the database file with the umask's mode: make it 0600 at once."""
    name = connection.settings_dict.get("NAME")
    if connection.vendor != "sqlite" or not name or str(name) == ":memory:":
        return
    if change := make_file_private(Path(name)):
        log.warning("database made private to its owner: %s", change)
