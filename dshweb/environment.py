"""What the environment configures, read without Django (settings and the CLI share it).

``DSHWEB_DATA_DIR`` (default ``var/`` in the checkout) holds the database, the secret key
and the demo home; the DSH home is ``$DSH_HOME`` (else ``~/.dsh``) or, when that does
not exist and ``DSHWEB_NO_DEMO`` is not ``1``, a writable copy of the bundled demo home.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dshweb.core.home import dsh_home

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_PROFILE = "sdk"


def data_dir() -> Path:
    return Path(os.environ.get("DSHWEB_DATA_DIR") or BASE_DIR / "var")


@dataclass(frozen=True, slots=True)
class HomeChoice:
    path: Path
    is_demo: bool


def home_choice() -> HomeChoice:
    """The DSH home to show; the demo copy is made on first use."""
    configured = dsh_home()
    if configured.exists() or os.environ.get("DSHWEB_NO_DEMO") == "1":
        return HomeChoice(configured, False)
    from dshweb.live.demo import ensure_demo_home

    return HomeChoice(ensure_demo_home(data_dir() / "demo-home"), True)


def profile() -> str:
    return os.environ.get("DSHWEB_PROFILE") or DEFAULT_PROFILE
