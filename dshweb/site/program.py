"""The ``dshweb`` command: one program for a person who installed dshweb.

Each verb is a command that ``manage.py`` also runs in a checkout (one implementation,
two doors): ``serve`` is ``dshweb_serve``, ``collect`` is ``dshweb_collect``, ``user`` is
``dshweb_user``, ``doctor`` is ``dshweb_doctor``, ``export-otlp`` is ``dshweb_export_otlp``
and ``snapshot`` is ``dsh_snapshot``,
which needs no Django and starts without it. ``dshweb VERB --help`` shows a verb's options.

A setting dshweb cannot use (:mod:`dshweb.setting_errors`) ends any verb with one line per
setting on standard error and exit status 2, before Django prints anything; ``doctor``
alone runs on, showing each as a problem row.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from dshweb import cli, setting_errors
from dshweb.cli import SNAPSHOT_HELP
from dshweb.setting_errors import ConfigurationError

PROGRAM = "dshweb"
VERBS: dict[str, tuple[str, str]] = {
    # verb: (the command behind it, what it does)
    "serve": ("dshweb_serve", "prepare the data folder and serve the dashboard"),
    "collect": ("dshweb_collect", "collect one DSH home for web workers (a team's set-up)"),
    "snapshot": ("dsh_snapshot", SNAPSHOT_HELP[0].lower() + SNAPSHOT_HELP[1:].rstrip(".")),
    "user": ("dshweb_user", "add a user or set a user's password"),
    "doctor": ("dshweb_doctor", "say what dshweb sees and what is wrong, with the fix"),
    "export-otlp": (
        "dshweb_export_otlp",
        "send a home's whole history to an OpenTelemetry collector, once",
    ),
}


DJANGO_OPTIONS = (
    "--version",
    "--settings",
    "--pythonpath",
    "--no-color",
    "--force-color",
    "--skip-checks",
)


def version() -> str:
    from importlib import metadata  # only for --version: it takes a while to import

    try:
        return metadata.version(PROGRAM)
    except metadata.PackageNotFoundError:  # a checkout that was never installed
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Watch and steer the context of DeepSeek Harness (DSH) agent sessions.",
        epilog=f"'{PROGRAM} VERB --help' shows a verb's options.",
    )
    parser.add_argument("--version", action="version", version=f"{PROGRAM} {version()}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, (_, says) in VERBS.items():
        verbs.add_parser(verb, help=says, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in VERBS:
        # No verb (or an unknown one): argparse prints the help, the version or the error.
        parser = _parser()
        if parser.parse_args(args).verb is None:
            parser.print_help()
            return 2
    verb, rest = args[0], args[1:]
    try:
        if verb == "snapshot":
            return cli.run_snapshot(rest, prog=f"{PROGRAM} snapshot")
        return _run_command(VERBS[verb][0], verb, rest)
    except ConfigurationError as refused:
        return setting_errors.refuse(refused)


def _run_command(name: str, verb: str, rest: list[str]) -> int:
    """Run management command ``name`` as ``dshweb VERB``: its parser, help and errors."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dshweb.settings")
    setting_errors.prepare_for(name)  # doctor shows what is refused rather than stopping
    # The settings first, without Django (which then finds them imported): a setting or a
    # data folder refused ends the verb before the second that Django and the apps take to
    # import.
    if settings := os.environ["DJANGO_SETTINGS_MODULE"]:  # empty: Django says what is wrong
        importlib.import_module(settings)
    import django
    from django.core.management import get_commands, load_command_class

    django.setup()
    command = load_command_class(get_commands()[name], name)
    # Django's options for a project's manage.py mean nothing to a person running dshweb.
    command.suppressed_base_arguments = set(DJANGO_OPTIONS)
    # argv[0] and argv[1] name the program in the command's usage: "dshweb serve".
    command.run_from_argv([PROGRAM, verb, *rest])
    return 0
