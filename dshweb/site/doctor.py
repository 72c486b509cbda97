"""What ``dshweb doctor`` looks at: each part dshweb depends on, what it found there, and
when something is wrong, the fix. It starts nothing (no managed ``dsh web``) and writes
nothing; the database is only read.
"""

from __future__ import annotations

import importlib.util
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from dshweb.compaction.engine import dsh_web_from_environment, test_connection
from dshweb.compaction.models import DshWebSetting
from dshweb.config import get_config
from dshweb.core.log.home import session_logs
from dshweb.core.profile.patch import PatchError, read_layer
from dshweb.core.profile.profile import PATCH_FILE, Layer, LayerKind, Profile, profile_names
from dshweb.core.settings.dshconfig import context_truth_presence, find_dsh
from dshweb.environment import home_choice, stores
from dshweb.live.watch import unreadable_folders

VERSION_TIMEOUT = 20.0


class Status(StrEnum):
    OK = "ok"
    NOTE = "note"  # works, but worth knowing
    PROBLEM = "problem"


@dataclass(frozen=True, slots=True)
class Finding:
    part: str
    status: Status
    seen: str
    fix: str = ""


def findings() -> list[Finding]:
    return [
        _data_folder(),
        _database(),
        _redis(),
        _home(),
        _unreadable(),
        _dsh(),
        *_profiles(),
        _engine(),
    ]


def _data_folder() -> Finding:
    folder = get_config().data_dir
    if not folder.is_dir():
        return Finding(
            "data folder", Status.NOTE, f"{folder} does not exist yet", "dshweb serve makes it"
        )
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode & 0o077:
        return Finding(
            "data folder",
            Status.PROBLEM,
            f"{folder} is readable by others (mode {mode:o}): it holds the database",
            "dshweb serve makes it private (0700)",
        )
    return Finding("data folder", Status.OK, f"{folder} (private)")


def _database() -> Finding:
    where = (
        "PostgreSQL (DATABASE_URL)"
        if connection.vendor == "postgresql"
        else f"SQLite {connection.settings_dict['NAME']}"
    )
    if connection.vendor == "sqlite" and not Path(connection.settings_dict["NAME"]).exists():
        return Finding("database", Status.NOTE, f"{where} not made yet", "dshweb serve makes it")
    try:
        connection.ensure_connection()
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        return Finding(
            "database",
            Status.PROBLEM,
            f"{where} cannot be reached: {str(error).strip()}",
            "start the database, or correct DATABASE_URL",
        )
    if pending:
        return Finding(
            "database",
            Status.NOTE,
            f"{where}: {len(pending)} migrations to apply",
            "dshweb serve applies them",
        )
    return Finding("database", Status.OK, f"{where}, up to date")


def _redis() -> Finding:
    url = stores().redis_url
    if not url:
        return Finding("Redis", Status.OK, "not configured: one process serves (no team)")
    if importlib.util.find_spec("channels_redis") is None:
        return Finding(
            "Redis",
            Status.PROBLEM,
            "DSHWEB_REDIS_URL is set, but channels-redis is not installed",
            "pip install 'dshweb[team]'",
        )
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=3).ping()
    except redis.RedisError as error:
        return Finding(
            "Redis",
            Status.PROBLEM,
            f"DSHWEB_REDIS_URL does not answer: {error}",
            "start Redis, or correct DSHWEB_REDIS_URL",
        )
    return Finding("Redis", Status.OK, "DSHWEB_REDIS_URL answers")


def _shown_home() -> tuple[Path, bool]:
    """The home the dashboard shows and whether it is the demo (without copying it)."""
    config = get_config()
    shown = home_choice(config.dsh_home, demo=config.demo, data_dir=config.data_dir, prepare=False)
    return shown.path, shown.is_demo


def _home() -> Finding:
    configured = get_config().dsh_home
    home, demo = _shown_home()
    if demo:
        return Finding(
            "DSH home",
            Status.NOTE,
            f"{configured} does not exist: the dashboard shows the demo home",
            "set DSH_HOME, or run dshweb serve --home PATH",
        )
    if not home.is_dir():
        return Finding(
            "DSH home",
            Status.PROBLEM,
            f"{home} does not exist",
            "set DSH_HOME to the folder DSH writes (default ~/.dsh)",
        )
    count = len(session_logs(home))
    if count == 0:
        return Finding(
            "DSH home",
            Status.NOTE,
            f"{home}: no session logs yet",
            "run a DSH session; it shows on the dashboard as it writes",
        )
    return Finding("DSH home", Status.OK, f"{home}: {count} session{'s' * (count != 1)}")


def _unreadable() -> Finding:
    """What the hub would read in the home and cannot: folders and the home's patch."""
    home, _ = _shown_home()
    if not home.is_dir():
        return Finding("home's files", Status.NOTE, "no home to read")
    problems = [f"{folder} {reason}" for folder, reason in unreadable_folders(home).items()]
    problems += _refused_layers([Layer(LayerKind.HOME, home / PATCH_FILE, home)])
    if problems:
        return Finding(
            "home's files",
            Status.PROBLEM,
            "dshweb does not read: " + "; ".join(problems),
            "make them regular files and folders DSH wrote (not links, FIFOs or devices), "
            "readable by this user",
        )
    return Finding("home's files", Status.OK, "every folder and file dshweb reads is readable")


def _refused_layers(layers: Sequence[Layer]) -> list[str]:
    """Why each of ``layers`` cannot be read, as DSH reads it or as dshweb does."""
    found = []
    for layer in layers:
        try:
            read_layer(layer)
        except PatchError as problem:
            found.append(str(problem))
    return found


def _dsh() -> Finding:
    dsh = find_dsh()
    if dsh is None:
        return Finding(
            "dsh",
            Status.NOTE,
            "no dsh on PATH: the settings pages cannot check a save with dsh, and no "
            "managed dsh web can run",
            "install DSH, or pip install 'dshweb[engine]'",
        )
    try:
        done = subprocess.run(
            [str(dsh), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            check=False,
            env={
                "DSH_HOME": str(_shown_home()[0]),
                "DSH_TELEMETRY_MODE": "DISABLED",
                "PATH": str(Path(dsh).parent),
            },
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Finding("dsh", Status.PROBLEM, f"{dsh} does not run: {error}", "reinstall DSH")
    said = (done.stdout.strip() or done.stderr.strip()).splitlines()
    version = said[-1] if said else "no version"
    if done.returncode != 0:
        return Finding("dsh", Status.PROBLEM, f"{dsh} --version failed: {version}", "reinstall DSH")
    return Finding("dsh", Status.OK, f"{dsh} ({version})")


def _profiles() -> list[Finding]:
    config = get_config()
    home, _ = _shown_home()
    names = profile_names(home) if home.is_dir() else []
    found = []
    if config.profile not in names:
        found.append(
            Finding(
                f"profile {config.profile}",
                Status.NOTE,
                f"not in {home / 'profiles'} (profiles there: {', '.join(names) or 'none'}): "
                "its settings are DSH's defaults",
                "set DSHWEB_PROFILE to the profile your sessions run with",
            )
        )
    for name in names:
        profile = Profile.read(home, name)
        problems = [*profile.problems, *_refused_layers(profile.layers[:1])]
        if problems:
            found.append(
                Finding(
                    f"profile {name}",
                    Status.PROBLEM,
                    "cannot be read as DSH reads it: " + "; ".join(problems),
                    "correct or replace the files named (regular files, valid YAML and JSON)",
                )
            )
            continue
        presence = context_truth_presence(profile, None)
        if presence.present:
            found.append(Finding(f"profile {name}", Status.OK, "dsh-context-truth is assembled"))
        else:
            found.append(
                Finding(
                    f"profile {name}",
                    Status.NOTE,
                    "no dsh-context-truth: the model is not told its occupancy",
                    f"dsh plugin --profile {name} add github:deepseekv41flash/dsh-context-truth"
                    if not presence.installed
                    else "list it in the profile's package.json dsh.profile.bundles",
                )
            )
    return found


def _engine() -> Finding:
    configured = dsh_web_from_environment()
    if configured is None:
        try:
            row = DshWebSetting.objects.first()
        except DatabaseError:
            row = None
        mode = row.mode if row is not None else DshWebSetting.Mode.OFF
        if mode == DshWebSetting.Mode.OFF:
            return Finding(
                "engine",
                Status.NOTE,
                "no DSH engine: the Compact button cannot compact",
                "Settings → Engine, or DSHWEB_ENGINE=managed",
            )
        if mode == DshWebSetting.Mode.MANAGED:
            return Finding("engine", Status.OK, "a managed dsh web (started on first Compact)")
        configured = "a stored launch URL"
    elif "managed" in configured:
        return Finding("engine", Status.OK, f"{configured}: started on first Compact")
    check = test_connection()
    if check.status != "reachable":
        return Finding(
            "engine",
            Status.PROBLEM,
            f"{configured}: {check.status}: {check.detail}",
            "start dsh web, or give its current launch URL",
        )
    return Finding("engine", Status.OK, f"{configured}: {check.detail}")
