#!/usr/bin/env python
"""Django's command-line entry point for dshweb."""

from __future__ import annotations

import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["dsh_snapshot"]:  # needs no Django: skip its start-up
        from dshweb.cli.snapshot import main as snapshot

        sys.exit(snapshot(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dshweb.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
