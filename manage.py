#!/usr/bin/env python
"""Django's command-line entry point for dshweb: a setting dshweb cannot use ends it with
one line per setting and exit status 2 (dshweb/setting_errors.py), but for dshweb_doctor,
which shows them."""

from __future__ import annotations

import os
import sys

from dshweb import setting_errors


def main() -> None:
    try:
        run()
    except setting_errors.ConfigurationError as refused:
        sys.exit(setting_errors.refuse(refused))


def run() -> None:
    if sys.argv[1:2] == ["dsh_snapshot"]:  # needs no Django: skip its start-up
        from dshweb.cli.snapshot import main as snapshot

        sys.exit(snapshot(sys.argv[2:]))
    setting_errors.prepare_for(sys.argv[1] if len(sys.argv) > 1 else "")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dshweb.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
