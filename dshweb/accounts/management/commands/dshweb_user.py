"""``dshweb user`` (``manage.py dshweb_user``): add a user, or set a user's password.

``add NAME [--staff]`` makes a user who can sign in (staff may also change settings,
engines and alert rules of everyone); ``passwd NAME`` sets a new password. The password is
read from stdin with ``--password-stdin`` (one line, for scripts), else a random one is
made and printed once: only its hash is stored, so it cannot be shown again.
"""

from __future__ import annotations

import secrets
import sys
from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction


def _password(options: dict[str, Any], user: Any) -> tuple[str, bool]:
    """The password to set and whether it was made here (then it is printed)."""
    if not options["password_stdin"]:
        return secrets.token_urlsafe(15), True
    password = sys.stdin.readline().rstrip("\r\n")
    try:
        validate_password(password, user)
    except ValidationError as error:
        raise CommandError("the password: " + " ".join(error.messages)) from error
    return password, False


class Command(BaseCommand):
    help = "Add a dashboard user, or set a user's password."

    def add_arguments(self, parser: ArgumentParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="add|passwd")
        add = verbs.add_parser("add", help="add a user who can sign in")
        add.add_argument("name", help="the user's name")
        add.add_argument(
            "--staff", action="store_true", help="may change settings, engines and alert rules"
        )
        passwd = verbs.add_parser("passwd", help="set a user's password")
        passwd.add_argument("name", help="the user's name")
        for verb in (add, passwd):
            verb.add_argument(
                "--password-stdin",
                action="store_true",
                help="read the password from stdin (else a random one is printed once)",
            )

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        name: str = options["name"]
        if options["verb"] == "add":
            user = users(**{users.USERNAME_FIELD: name}, is_staff=options["staff"])
            try:
                user.full_clean(exclude=["password"])
            except ValidationError as error:
                problems = [m for messages in error.message_dict.values() for m in messages]
                raise CommandError(f"cannot add {name!r}: {' '.join(problems)}") from error
        else:
            try:
                user = users.objects.get(**{users.USERNAME_FIELD: name})
            except users.DoesNotExist as error:
                raise CommandError(f"no user {name!r}; add one with 'dshweb user add'") from error
        password, made = _password(options, user)
        user.set_password(password)
        try:
            with transaction.atomic():
                user.save()
        except IntegrityError as error:
            raise CommandError(f"cannot add {name!r}: {error}") from error
        done = "added" if options["verb"] == "add" else "changed the password of"
        shown = f" with password '{password}' (shown only this once)" if made else ""
        self.stdout.write(f"dshweb: {done} user '{name}'{shown}")
