"""Bytecode kept for the Python processes the tests and benchmarks start, where the
environment says to write none.

With ``PYTHONDONTWRITEBYTECODE`` set (as on this workplace's machines, and some CI
images), every Python process compiles every module it imports afresh: a start of dshweb
then spends about 1.0 s of CPU compiling (1.6 s to its first answer on a small home,
0.6 s with its bytecode kept), where a pip install compiled it once. Kept in a folder of
their own (``PYTHONPYCACHEPREFIX``), outside the checkout, a start measures dshweb, not
the compiler.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path


def keep_bytecode(environ: MutableMapping[str, str], folder: Path) -> bool:
    """Change ``environ`` (``os.environ``, or a child's) to keep bytecode in ``folder``;
    False when it keeps it already (no ``PYTHONDONTWRITEBYTECODE``, or a
    ``PYTHONPYCACHEPREFIX`` of its own)."""
    if not environ.get("PYTHONDONTWRITEBYTECODE") or environ.get("PYTHONPYCACHEPREFIX"):
        return False
    del environ["PYTHONDONTWRITEBYTECODE"]
    environ["PYTHONPYCACHEPREFIX"] = str(folder)
    return True


def user_bytecode_folder() -> Path:
    """A folder of this user's for the bytecode of the processes a benchmark starts, kept
    between runs (Python checks each file against its source)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dshweb-bytecode"
