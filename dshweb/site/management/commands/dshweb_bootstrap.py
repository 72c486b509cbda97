"""``manage.py dshweb_bootstrap``: everything a start needs before the server runs.

``scripts/start`` runs it on every start; each step changes nothing when it is done
already, and none of it happens when the settings are imported:

1. the data folder (``DSHWEB["DATA_DIR"]``) is created 0700, or an existing one and its
   secret files are tightened, each change logged (under ``dshweb.site``); one another user
   owns or others can write is refused (:mod:`dshweb.private_data`), as is a database
   that cannot be reached, each with one line (:mod:`dshweb.setting_errors`);
2. the secret key is kept in ``secret_key`` there, 0600 from the start, unless
   ``DSHWEB_SECRET_KEY`` gives it or the file exists (servers started after this read it);
3. ``STATIC_ROOT`` exists (WhiteNoise warns at start without it);
4. the database is migrated;
5. with no superuser, ``admin`` is created with a random password, and both are printed
   once: the password is stored only as Django's hash, so it cannot be shown again.
"""

from __future__ import annotations

import logging
import secrets
import shlex
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, IntegrityError, connection, transaction

from dshweb.config import get_config
from dshweb.private_data import make_private
from dshweb.secret_key import create_secret_key
from dshweb.setting_errors import ConfigurationError

USERNAME = "admin"
log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Prepare dshweb's data folder (private, secret key, database) and create the first "
        "superuser (admin, random password) unless one exists."
    )
    # The checks would say what this command is about to fix (no folder, no key yet).
    requires_system_checks = ()

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = options["verbosity"]
        config = get_config()
        for change in make_private(config.data_dir):
            log.warning("data folder made private to its owner: %s", change)
        key = config.secret_key_path
        if key is not None and create_secret_key(key) and verbosity >= 2:
            self.stdout.write(f"dshweb: a new secret key is kept in {key}")
        settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
        try:
            call_command("migrate", interactive=False, verbosity=max(0, verbosity - 1))
        except DatabaseError as error:  # cannot connect (a timeout), not a database file
            said = " ".join(str(error).split())
            if connection.vendor == "postgresql":
                raise ConfigurationError(
                    "DATABASE_URL",
                    f"the database cannot be used: {said}",
                    "start PostgreSQL, or correct DATABASE_URL",
                ) from None
            name = Path(connection.settings_dict["NAME"])
            raise ConfigurationError(
                "DSHWEB_DATA_DIR",
                f"{name} cannot be used as dshweb's database: {said}",
                f"move it away (mv {shlex.quote(str(name))} {shlex.quote(str(name) + '.moved')}): "
                "dshweb serve makes a new one",
            ) from None
        self._first_superuser(verbosity)

    def _first_superuser(self, verbosity: int) -> None:
        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            if verbosity >= 2:
                self.stdout.write("dshweb: a superuser exists already; nothing to do.")
            return
        password = secrets.token_urlsafe(15)
        try:
            with transaction.atomic():
                if users.objects.filter(**{users.USERNAME_FIELD: USERNAME}).exists():
                    raise CommandError(
                        f"a user {USERNAME!r} exists but is not a superuser; make one with "
                        "'manage.py createsuperuser'"
                    )
                users.objects.create_superuser(USERNAME, password=password)
        except IntegrityError as error:
            # Another start created it between the check and the insert.
            raise CommandError(f"could not create {USERNAME!r}: {error}") from error
        self.stdout.write(
            f"dshweb: created superuser '{USERNAME}' with password '{password}' "
            "(shown only this once; change it with 'dshweb user passwd admin')"
        )
