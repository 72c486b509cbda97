"""Django's ``SECRET_KEY``: ``DSHWEB_SECRET_KEY``, else the key file of the data folder.

``settings.py`` reads the file with :func:`read_secret_key`, read-only, when it is
imported, through :func:`dshweb.core.files.read_text` (a regular file, not a link, at most
:data:`LIMIT` bytes; a FIFO or a device there never blocks the start). What cannot be read
as a key (an empty file too) is refused with a
:class:`~dshweb.setting_errors.ConfigurationError` naming the file. Django wants
``SECRET_KEY`` among its settings, so this read is the one I/O of importing them (it
creates, changes and copies nothing). ``manage.py dshweb_bootstrap``,
which ``scripts/start`` runs on every start, creates the file with
:func:`create_secret_key`, 0600 from the start, on the first start. A process started
before there is one (a fresh checkout's tests, a ``manage.py`` command before the first
start) signs with a random key of its own, shared with no other process; the system check
``dshweb.W001`` says so. Read without Django, like :mod:`dshweb.private_data`.
"""

from __future__ import annotations

import secrets
import shlex
from pathlib import Path

from dshweb.core.files import FileRefused, read_text
from dshweb.private_data import SETTING, write_secret
from dshweb.setting_errors import ConfigurationError

FILE_NAME = "secret_key"
"""The key file's name in the data folder."""
LIMIT = 4096
"""The longest key file read (a key made here is 67 bytes)."""


def read_secret_key(path: Path) -> str | None:
    """The key kept in ``path``; None when there is none yet. Raises
    :class:`~dshweb.setting_errors.ConfigurationError` when the file cannot be read as one."""
    fix = (
        f"move it away (mv {shlex.quote(str(path))} {shlex.quote(str(path) + '.moved')}): "
        "dshweb serve keeps a new key there, and everyone signs in again; or set DSHWEB_SECRET_KEY"
    )
    try:
        text = read_text(path, limit=LIMIT)
    except FileRefused as refused:
        if refused.reason.endswith("permission denied"):
            fix = f"chmod 600 {shlex.quote(str(path))}, as the user dshweb runs as"
        raise ConfigurationError(SETTING, str(refused), fix) from None
    if text is None:
        return None
    if not text.strip():
        raise ConfigurationError(SETTING, f"{path} holds no key", fix)
    return text.strip()


def random_secret_key() -> str:
    return secrets.token_urlsafe(50)


def create_secret_key(path: Path) -> bool:
    """Keep a new random key in ``path`` unless it holds one; True when it made one.

    The folder must exist (bootstrap makes it private first)."""
    if read_secret_key(path) is not None:
        return False
    try:
        write_secret(path, random_secret_key())
    except FileExistsError:  # another process made it first
        return False
    return True
