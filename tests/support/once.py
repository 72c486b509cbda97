"""What the whole run makes once, whichever test process asks for it first: a folder in
the run's own folder (``DSHWEB_TEST_RUN_DIR``, made by ``tests/conftest.py`` in the
process pytest started, inherited by its workers and removed when the run ends). The
first worker to ask makes it under a lock; the others wait for it, then read it."""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

RUN_DIR = "DSHWEB_TEST_RUN_DIR"


def made_once(name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name`` of this run, ``make`` filling it (an empty folder) the first
    time any test process asks. A ``make`` that fails leaves nothing behind: the next ask
    tries again."""
    run = Path(os.environ[RUN_DIR])
    made = run / name
    with (run / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.is_dir():
            scratch = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=run))
            make(scratch)
            scratch.rename(made)
    return made


def all_at_the_door(name: str, mine: str, count: int, timeout: float = 120.0) -> None:
    """Say that ``mine`` (a test process) is at the door ``name``, then wait until
    ``count`` processes are, or ``timeout`` seconds have passed (a process that died on the
    way holds up the others that long, no more)."""
    door = Path(os.environ[RUN_DIR]) / name
    door.mkdir(exist_ok=True)
    (door / mine).touch()
    deadline = time.monotonic() + timeout
    while len(os.listdir(door)) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def write_for_the_run(name: str, text: str) -> None:
    """Write the file ``name`` of this run's folder: what a test process learnt as it
    collected, for the scheduler or the next pass. Every process collects the same tests,
    so any one's will do."""
    write_whole(Path(os.environ[RUN_DIR]) / name, text)


def write_whole(path: Path, text: str) -> None:
    """Write ``path`` at once, whole: a reader (of any process) never sees half of it."""
    scratch = path.with_name(f".{path.name}-{os.getpid()}")
    try:
        scratch.write_text(text, encoding="utf-8")
        scratch.replace(path)
    finally:
        scratch.unlink(missing_ok=True)
