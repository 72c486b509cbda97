"""The demo made live: a writable copy of the bundled demo home, and one recorded
session replayed into it at its recorded pace, looping, from a daemon thread.

The bundled home inside the package is never written to: :func:`ensure_demo_home`
copies it, and :func:`start_demo_replay` refuses to replay into it. The replay thread
logs its errors (logger ``dshweb.demo.home``) and tries again with a growing back-off; it
only ends when :func:`stop_demo_replay` is called (or the process exits).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)

DEMO_DIR = Path(__file__).resolve().parent.parent / "demo"
BUNDLED_HOME = DEMO_DIR / "home"
REPLAY_SOURCE = DEMO_DIR / "replay" / "session.v4.jsonl.zstd"
REPLAY_SESSION_ID = "demo-live"
BACKOFF = (1.0, 60.0)
"""First and longest wait, in seconds, before the replay tries again after an error."""
BUSY_WAIT = 30.0
"""Seconds between tries while another process replays into the same home."""

_guard = threading.Lock()
_thread: threading.Thread | None = None
_stop = threading.Event()


def ensure_demo_home(target: Path, bundled: Path = BUNDLED_HOME) -> Path:
    """A writable copy of the bundled demo home at ``target`` (copied when missing).

    The copy is made beside ``target`` and renamed into place, so a half-made copy is
    never taken for the demo; a copy another process finished first is kept.
    """
    if (target / "sessions").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(bundled, staging)
    try:
        os.replace(staging, target)  # fails when another process made a non-empty copy first
    except OSError:
        if not (target / "sessions").is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    logger.info("demo home copied to %s", target)
    return target


def start_demo_replay(
    home: Path, *, source: Path = REPLAY_SOURCE, bundled: Path = BUNDLED_HOME
) -> threading.Thread | None:
    """Start the replay thread into ``home``; None when one already runs (or ``home`` is
    the bundled home, which must stay read-only)."""
    global _thread
    if home.resolve() == bundled.resolve():
        logger.warning("not replaying into the bundled demo home %s; copy it first", home)
        return None
    with _guard:
        if _thread is not None and _thread.is_alive():
            return None
        _stop.clear()
        _thread = threading.Thread(
            target=_replay_forever,
            args=(home, source, _stop),
            name="dshweb-demo-replay",
            daemon=True,
        )
        _thread.start()
        return _thread


def stop_demo_replay(timeout: float = 5.0) -> None:
    """Stop the replay thread, if any, and wait up to ``timeout`` seconds for it."""
    global _thread
    with _guard:
        thread, _thread = _thread, None
        _stop.set()
    if thread is not None:
        thread.join(timeout)


def _replay_forever(home: Path, source: Path, stop: threading.Event) -> None:
    # The replay's reader is loaded by the demo's replay, not by every start.
    from dshweb.demo.replay import ReplayBusyError, load_recording, play_recording, replay_dir

    delay = BACKOFF[0]
    while not stop.is_set():
        started = time.monotonic()
        try:
            recording = load_recording(source.read_bytes(), session_id=REPLAY_SESSION_ID)
            target = replay_dir(home, recording)
            logger.info(
                "replaying %s (%.0f s, %d frames) into %s",
                recording.session_id,
                recording.duration,
                len(recording.frames),
                target,
            )
            play_recording(recording, target, stop)
            return
        except ReplayBusyError as busy:
            logger.info("demo replay waits: %s", busy)
            wait = BUSY_WAIT
        except Exception:  # whatever it is, the demo must come back
            if time.monotonic() - started > BACKOFF[1]:
                delay = BACKOFF[0]  # it ran fine for a while: not a failure streak
            logger.exception("demo replay failed; trying again in %.0f s", delay)
            wait, delay = delay, min(BACKOFF[1], delay * 2)
        if stop.wait(wait):
            return
