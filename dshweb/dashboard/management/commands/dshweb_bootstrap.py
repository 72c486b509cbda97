"""``manage.py dshweb_bootstrap``: make sure someone can sign in, on the first start.

With no superuser, creates ``admin`` with a random password and prints both once;
the password is stored only as Django's hash, so it cannot be shown again. With a
superuser already there it changes nothing, so every start may run it.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction

USERNAME = "admin"


class Command(BaseCommand):
    help = "Create the first superuser (admin, random password) unless one exists."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            if options["verbosity"] >= 2:
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
            "(shown only this once; change it with 'manage.py changepassword admin')"
        )
