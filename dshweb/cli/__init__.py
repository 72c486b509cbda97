"""Command-line tools that run without starting Django (``manage.py`` hands them over)."""

from __future__ import annotations

from collections.abc import Sequence

SNAPSHOT_HELP = "Print the token usage, context pressure and breakdown of DSH sessions."
"""What ``dsh_snapshot`` does (:mod:`dshweb.cli.snapshot`), here where the ``dshweb``
program's help reads it without importing the command."""


def run_snapshot(argv: Sequence[str], prog: str) -> int:
    """Run ``dsh_snapshot`` as ``prog``. Its fold is imported here, when it runs: the
    ``dshweb`` program's other verbs (a refusal above all) never wait for it."""
    from dshweb.cli.snapshot import main

    return main(argv, prog=prog)
