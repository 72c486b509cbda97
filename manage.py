#!/usr/bin/env python
"""Django's command-line entry point for dshweb: a setting dshweb cannot use ends it with
one line per setting and exit status 2 (dshweb/setting_errors.py), but for dshweb_doctor,
which shows them."""

from __future__ import annotations

import os
import sys


def main() -> None:
    from dshweb import setting_errors

    try:
        run()
    except setting_errors.ConfigurationError as refused:
        sys.exit(setting_errors.refuse(refused))


def run() -> None:
    from dshweb import setting_errors

    if sys.argv[1:2] == ["dsh_snapshot"]:  # needs no Django: skip its start-up
        from dshweb.cli.snapshot import main as snapshot

        sys.exit(snapshot(sys.argv[2:]))
    if sys.argv[1:2] == ["dshweb_doctor"]:
        setting_errors.look_only()  # it shows what is refused rather than stopping at it
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dshweb.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
