"""Which ``dsh web`` the Compact button asks: ``DSHWEB``'s ``ENGINE_URL`` or ``ENGINE``
(they win), else the stored setting (Settings → Engine); a managed one is started and
supervised here (:mod:`dshweb.dsh_web.managed`). A collector reads no stored row: the
shared database is no place for its machine's launch token."""

from __future__ import annotations

import atexit
import threading
from pathlib import Path

from dshweb.compaction.models import DshWebSetting
from dshweb.config import get_config
from dshweb.core.said import say
from dshweb.dsh_web.client import (
    CompactOutcome,
    CompactStatus,
    ConnectionCheck,
    ConnectionStatus,
    DshWebClient,
    LaunchUrlError,
)
from dshweb.dsh_web.managed import ManagedDshWeb
from dshweb.live.service import own_home

COMPACT_TIMEOUT = 15 * 60.0
"""A summariser call can take minutes; past this overall deadline the request is reported
as timed out (a ``dsh web`` that answers nothing at all fails at the login, in seconds)."""
MANAGED_START_TIMEOUT = 60.0

_managed: ManagedDshWeb | None = None
_managed_lock = threading.Lock()


def managed_dsh_web(home: Path | None = None) -> ManagedDshWeb:
    """The process's one managed ``dsh web`` for ``home`` (default: the configured one;
    started lazily)."""
    global _managed
    with _managed_lock:
        home = own_home().path if home is None else home
        if _managed is None or _managed.home != home:
            if _managed is not None:
                _managed.stop()
            _managed = ManagedDshWeb(home).start()
            atexit.register(_managed.stop)
        return _managed


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
    if mode == "managed":
        managed = managed_dsh_web(home)
        state = managed.wait_running(MANAGED_START_TIMEOUT)
        return "managed", managed.launch_url, "" if managed.launch_url else state.reason
    return "off", None, say("engine-none")


def dsh_web_configured() -> bool:
    """Whether this process has a ``dsh web`` to ask (set by the environment, or a stored
    launch URL, or a managed one), without starting one: the Compact button of a home this
    process reads is disabled, saying why, when it has none."""
    config = get_config()
    if config.engine_url or config.engine == "managed":
        return True
    row = DshWebSetting.objects.first()
    if row is None:
        return False
    return row.mode == DshWebSetting.Mode.MANAGED or (
        row.mode == DshWebSetting.Mode.URL and bool(row.launch_url)
    )


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
