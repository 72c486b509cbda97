"""Which ``dsh web`` the Compact button asks: ``DSHWEB``'s ``ENGINE_URL`` or ``ENGINE``
(they win), else the stored setting (Settings → Engine); a managed one is started and
supervised here (:mod:`dshweb.dsh_web.managed`). A collector reads no stored row: the
shared database is no place for its machine's launch token.

On the demo home, with none of those set, Compact asks a managed ``dsh web`` all the same
(when the DSH runtime is installed): the demo shows Compact working. A managed ``dsh web``
on the demo home always asks the demo's stand-in model (:mod:`dshweb.demo.model`), never
the provider the environment names: the demo's sessions go to no real model."""

from __future__ import annotations

import atexit
import threading
from enum import StrEnum
from pathlib import Path

from dshweb.compaction.models import DshWebSetting
from dshweb.config import get_config
from dshweb.core.said import say
from dshweb.core.settings.dshconfig import find_dsh
from dshweb.demo.model import demo_model
from dshweb.dsh_web.client import (
    CompactOutcome,
    CompactStatus,
    ConnectionCheck,
    ConnectionStatus,
    DshWebClient,
    LaunchUrlError,
)
from dshweb.dsh_web.managed import ManagedDshWeb
from dshweb.live.service import collecting, demo_replays, own_home, own_home_name

COMPACT_TIMEOUT = 15 * 60.0
"""A summariser call can take minutes; past this overall deadline the request is reported
as timed out (a ``dsh web`` that answers nothing at all fails at the login, in seconds)."""
MANAGED_START_TIMEOUT = 60.0

_managed: ManagedDshWeb | None = None
_managed_lock = threading.Lock()


def managed_dsh_web(home: Path | None = None) -> ManagedDshWeb:
    """The process's one managed ``dsh web`` for ``home`` (default: the configured one;
    started lazily); on the demo home, asking the demo's stand-in model."""
    global _managed
    with _managed_lock:
        own = own_home()
        home = own.path if home is None else home
        if _managed is None or _managed.home != home:
            if _managed is not None:
                _managed.stop()
            demo = own.is_demo and home == own.path
            _managed = ManagedDshWeb(home, env_extra=demo_model().env() if demo else {}).start()
            atexit.register(_managed.stop)
        return _managed


def demo_compacts() -> bool:
    """Compact asks a managed ``dsh web`` because this process shows the demo home and
    nothing else is set (:func:`dsh_web_choice`)."""
    config = get_config()
    if config.engine_url or config.engine == "managed" or not collecting():
        return False  # a web worker reads no home of its own, the demo's neither
    if not own_home().is_demo:
        return False
    row = DshWebSetting.objects.first()
    return row is None or row.mode == DshWebSetting.Mode.OFF


def dsh_web_choice(home: Path | None = None, *, stored: bool = True) -> tuple[str, str | None, str]:
    """(mode, launch URL or None, why not) — the settings (``DSHWEB_ENGINE_URL``,
    ``DSHWEB_ENGINE``) win over the stored row; a managed one runs on ``home`` (default:
    the configured one). A collector reads no stored row (``stored=False``): the shared
    database is no place for its machine's launch token."""
    config = get_config()
    if config.engine_url:
        return "url", config.engine_url, ""
    if config.engine == "managed":
        mode = "managed"
    elif not stored:
        return (
            "off",
            None,
            say("engine-none-for-collector"),
        )
    else:
        row = DshWebSetting.objects.first()
        mode = row.mode if row is not None else DshWebSetting.Mode.OFF
        if mode == DshWebSetting.Mode.URL:
            launch = row.launch_url if row is not None else ""
            return "url", launch or None, "" if launch else say("engine-no-url-stored")
        if demo_compacts() and (home is None or home == own_home().path):
            mode = "managed"
    if mode == "managed":
        managed = managed_dsh_web(home)
        state = managed.wait_running(MANAGED_START_TIMEOUT)
        return "managed", managed.launch_url, "" if managed.launch_url else state.reason
    return "off", None, say("engine-none")


def dsh_web_configured() -> bool:
    """Whether this process has a ``dsh web`` to ask (set by the environment, or a stored
    launch URL, or a managed one, or the demo's when the DSH runtime is installed),
    without starting one: the Compact button of a home this process reads is disabled,
    saying why, when it has none."""
    config = get_config()
    if config.engine_url or config.engine == "managed":
        return True
    if demo_compacts():
        return find_dsh() is not None
    row = DshWebSetting.objects.first()
    if row is None:
        return False
    return row.mode == DshWebSetting.Mode.MANAGED or (
        row.mode == DshWebSetting.Mode.URL and bool(row.launch_url)
    )


class NoCompact(StrEnum):
    """Why a session of this process's own home has no Compact (the page's
    ``data-reason``)."""

    NO_ENGINE = "no-engine"
    """No ``dsh web`` is set up."""
    NO_RUNTIME = "no-runtime"
    """The demo would run one, but the DSH runtime is not installed."""
    REPLAYED = "replayed"
    """The demo's replay writes this session: no ``dsh web`` may attach it."""


def why_no_compact(session_id: str) -> NoCompact | None:
    """Why Compact cannot ask anything for a session of this process's own home, if so."""
    if demo_replays(own_home_name(), session_id):
        return NoCompact.REPLAYED
    if dsh_web_configured():
        return None
    return NoCompact.NO_RUNTIME if demo_compacts() else NoCompact.NO_ENGINE


def dsh_web_from_environment() -> str | None:
    """How the environment sets ``dsh web``, if it does (it wins over the stored row)."""
    config = get_config()
    if config.engine_url:
        return say("engine-from-url-setting")
    if config.engine == "managed":
        return "DSHWEB_ENGINE=managed"
    return None


def test_connection() -> ConnectionCheck:
    """What the configured ``dsh web`` answers now (never attaches a session)."""
    _mode, url, why = dsh_web_choice()
    if url is None:
        return ConnectionCheck(ConnectionStatus.UNREACHABLE, say("engine-not-configured", why=why))
    try:
        return DshWebClient(url, timeout=10.0).check()
    except LaunchUrlError as problem:
        return ConnectionCheck(ConnectionStatus.UNREACHABLE, str(problem))


def ask_dsh_web(session_id: str, home: Path | None, stored: bool) -> CompactOutcome:
    _mode, url, why = dsh_web_choice(home, stored=stored)
    if url is None:
        return CompactOutcome(
            CompactStatus.ENGINE_ERROR,
            say("engine-not-configured", why=why),
            code="dshweb/not-configured",
        )
    try:
        client = DshWebClient(url, timeout=COMPACT_TIMEOUT)
    except LaunchUrlError as problem:
        return CompactOutcome(CompactStatus.ENGINE_ERROR, str(problem), code="dshweb/bad-url")
    return client.compact(session_id)
