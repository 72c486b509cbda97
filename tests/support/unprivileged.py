"""Running a command that cannot read a file whose mode says so, even as root.

Root reads every file whatever its mode (``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``),
so a test of an unreadable file or folder runs its reader in a child process without
those two capabilities (util-linux's ``setpriv``); anyone else runs it as it is.
"""

from __future__ import annotations

import os
import shutil

import pytest


def without_reading_rights(argv: list[str]) -> list[str]:
    """``argv`` run so that a file's mode bits decide whether it can be read."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads every file, and setpriv (util-linux) is not here to stop it")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *argv]
