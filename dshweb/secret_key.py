"""Django's ``SECRET_KEY``: ``DSHWEB_SECRET_KEY``, else the key file of the data folder.

``settings.py`` reads the file with :func:`read_secret_key`, read-only, when it is
imported: Django wants ``SECRET_KEY`` among its settings, so this read is the one I/O of
importing them (it creates, changes and copies nothing). ``manage.py dshweb_bootstrap``,
which ``scripts/start`` runs on every start, creates the file with
:func:`create_secret_key`, 0600 from the start, on the first start. A process started
before there is one (a fresh checkout's tests, a ``manage.py`` command before the first
start) signs with a random key of its own, shared with no other process; the system check
``dshweb.W001`` says so. Read without Django, like :mod:`dshweb.private_data`.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from dshweb.private_data import write_secret

FILE_NAME = "secret_key"
"""The key file's name in the data folder."""


def read_secret_key(path: Path) -> str | None:
    """The key kept in ``path``; None when there is none yet."""
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (FileNotFoundError, NotADirectoryError):
        return None


def random_secret_key() -> str:
    return secrets.token_urlsafe(50)


def create_secret_key(path: Path) -> bool:
    """Keep a new random key in ``path`` unless it holds one; True when it made one.

    The folder must exist (bootstrap makes it private first)."""
    if read_secret_key(path) is not None:
        return False
    try:
        write_secret(path, random_secret_key())
    except FileExistsError:  # another process made it first (or an empty file is there)
        return False
    return True
