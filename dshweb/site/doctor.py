"""What ``dshweb doctor`` looks at: each part dshweb depends on, what it found there, and
when something is wrong, the fix. It starts nothing (no managed ``dsh web``) and writes
nothing; the database is only read.

It runs on settings dshweb refuses (:mod:`dshweb.setting_errors`): each refused setting
is a problem row of its own, named as a person sets it (``DATABASE_URL``), with the fix;
what the data folder holds that dshweb refuses (another user's, writable by others, a
FIFO or a link where the key or the database is) is a problem row of the data folder,
with the command that fixes it. A part that depends on a refused setting is not looked
at (a note says so): no database is opened then. Everything it waits for has a deadline
(the database's connect timeout, Redis's socket timeouts, ``dsh --version``'s).
"""

from __future__ import annotations

import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from dshweb.compaction.models import DshWebSetting
from dshweb.compaction.which_dsh_web import dsh_web_from_environment, test_connection
from dshweb.config import get_config
from dshweb.core.fold.cost_settings import DEFAULT_PRICE_AS, NO_ALIASES
from dshweb.core.log.home import session_logs
from dshweb.core.profile.patch import PatchError, read_layer
from dshweb.core.profile.profile import Layer, Profile, home_layer, profile_names
from dshweb.core.settings.dshconfig import context_truth_presence, find_dsh
from dshweb.environment import home_choice, store
from dshweb.installed import add_extra
from dshweb.live.watch import unreadable_folders
from dshweb.otlp.send import EXTRA as OTEL_EXTRA
from dshweb.otlp.send import Sender, exporters_installed
from dshweb.private_data import DATABASE_FILES, FOLDERS, KEY_FILES, SETTING, data_problems
from dshweb.secret_key import read_secret_key
from dshweb.setting_errors import ConfigurationError

VERSION_TIMEOUT = 20.0
PROBE_TIMEOUT = 3.0
"""Seconds the OpenTelemetry collector has to answer."""


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


def findings(*, home_option: bool = False) -> list[Finding]:
    """What dshweb sees; ``home_option``: the home was named by ``--home``, which ``serve``
    refuses when it is no folder (no demo stands in for it)."""
    database, usable = _database()
    return [
        *_configuration(),
        *_data_folder(),
        database,
        _redis(),
        _home(home_option=home_option),
        _unreadable(),
        _dsh(),
        *_profiles(),
        _prices(),
        _dsh_web(stored=usable),
        _otlp(),
    ]


def _refused() -> tuple[ConfigurationError, ...]:
    """The settings ``settings.py`` refused (``dshweb doctor`` alone runs on them)."""
    return tuple(getattr(settings, "CONFIGURATION_PROBLEMS", ()))


def _configuration() -> list[Finding]:
    return [
        Finding(problem.setting, Status.PROBLEM, problem.problem, problem.fix)
        for problem in _refused()
        if problem.setting != SETTING  # the data folder's row says these
    ]


def _data_folder() -> list[Finding]:
    config = get_config()
    folder = config.data_dir
    names = (
        *(KEY_FILES if config.secret_key_file else ()),
        *(DATABASE_FILES if connection.vendor != "postgresql" else ()),
        *FOLDERS,
    )
    problems = data_problems(folder, names=names)
    if not problems and config.secret_key_path is not None:
        try:
            read_secret_key(config.secret_key_path)
        except ConfigurationError as problem:
            problems = [problem]
    if problems:
        return [Finding("data folder", Status.PROBLEM, p.problem, p.fix) for p in problems]
    if not folder.is_dir():
        return [
            Finding(
                "data folder", Status.NOTE, f"{folder} does not exist yet", "dshweb serve makes it"
            )
        ]
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode & 0o077:
        return [
            Finding(
                "data folder",
                Status.PROBLEM,
                f"{folder} is readable by others (mode {mode:o}): it holds the database",
                "dshweb serve makes it private (0700)",
            )
        ]
    return [Finding("data folder", Status.OK, f"{folder} (private)")]


def _database() -> tuple[Finding, bool]:
    """The database's row, and whether it may be read (it is there and answers)."""
    if connection.vendor == "unknown":  # none: settings.py refused the one configured
        refused = ", ".join(
            sorted({p.setting for p in _refused() if p.setting in ("DATABASE_URL", SETTING)})
        )
        seen = f"not looked at: {refused or 'its setting'} is refused"
        return Finding("database", Status.NOTE, seen), False
    where = (
        "PostgreSQL (DATABASE_URL)"
        if connection.vendor == "postgresql"
        else f"SQLite {connection.settings_dict['NAME']}"
    )
    if connection.vendor == "sqlite" and not Path(connection.settings_dict["NAME"]).exists():
        made = Finding("database", Status.NOTE, f"{where} not made yet", "dshweb serve makes it")
        return made, False  # opening it would make it
    try:
        connection.ensure_connection()
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        return Finding(
            "database",
            Status.PROBLEM,
            f"{where} cannot be reached: {' '.join(str(error).split())}",
            "start the database, or correct DATABASE_URL",
        ), False
    if pending:
        return Finding(
            "database",
            Status.NOTE,
            f"{where}: {len(pending)} migrations to apply",
            "dshweb serve applies them",
        ), True
    return Finding("database", Status.OK, f"{where}, up to date"), True


def _prices() -> Finding:
    """The models this server prices as another (DSHWEB_PRICE_AS, else its default)."""
    if any(problem.setting == "DSHWEB_PRICE_AS" for problem in _refused()):
        return Finding("prices", Status.NOTE, "not looked at: DSHWEB_PRICE_AS is refused")
    try:
        aliases = get_config().rate_book.aliases
    except ConfigurationError as refused:
        return Finding("prices", Status.NOTE, f"not looked at: {refused.setting} is refused")
    if not aliases:
        return Finding(
            "prices",
            Status.OK,
            "every model as the dsh-llm-cost registry prices it, or not at all",
            f"DSHWEB_PRICE_AS={DEFAULT_PRICE_AS} prices DSH's own model",
        )
    said = ", ".join(f"{model} priced as {entry}" for model, entry in aliases)
    return Finding(
        "prices",
        Status.OK,
        f"{said} (every figure priced so says so)",
        f"DSHWEB_PRICE_AS=model=registry-model changes it; DSHWEB_PRICE_AS={NO_ALIASES}: none",
    )


def _otlp() -> Finding:
    """The OpenTelemetry export: off, or on and where, and whether the collector answers."""
    part = "OpenTelemetry"
    refused = [p.setting for p in _refused() if p.setting.startswith(("OTEL_", "DSHWEB_OTLP"))]
    if refused:
        return Finding(part, Status.NOTE, f"not looked at: {refused[0]} is refused")
    target = get_config().otlp
    if not target.live:
        return Finding(
            part,
            Status.OK,
            "no live export (no OTEL_EXPORTER_OTLP_ENDPOINT set)",
            "docs/opentelemetry.md says how to point dshweb at a collector",
        )
    urls = f"{target.metrics_url} and {target.traces_url}"
    if not exporters_installed():
        return Finding(
            part,
            Status.PROBLEM,
            f"exports to {urls}, but its exporters are not installed",
            add_extra(OTEL_EXTRA),
        )
    sender = Sender(target, timeout=PROBE_TIMEOUT)
    try:
        answers = sender.probe()
    finally:
        sender.close()
    if not answers:
        return Finding(
            part,
            Status.PROBLEM,
            f"exports to {urls}: the collector does not take it ({sender.last_problem})",
            "start the collector, or correct OTEL_EXPORTER_OTLP_ENDPOINT (and its headers)",
        )
    return Finding(part, Status.OK, f"exports to {urls}: the collector answers")


def _redis() -> Finding:
    try:
        url = store("DSHWEB_REDIS_URL")
    except ConfigurationError:
        return Finding("Redis", Status.NOTE, "not looked at: DSHWEB_REDIS_URL is refused")
    if not url:
        return Finding("Redis", Status.OK, "not configured: one process serves (no team)")
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=3, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        return Finding(
            "Redis",
            Status.PROBLEM,
            f"DSHWEB_REDIS_URL does not answer: {error}",
            "start Redis, or correct DSHWEB_REDIS_URL",
        )
    return Finding("Redis", Status.OK, "DSHWEB_REDIS_URL answers")


def _own_home() -> tuple[Path, bool]:
    """The process's own home and whether it is the demo (without copying it)."""
    config = get_config()
    own = home_choice(config.dsh_home, demo=config.demo, data_dir=config.data_dir, prepare=False)
    return own.path, own.is_demo


def _home(*, home_option: bool = False) -> Finding:
    configured = get_config().dsh_home
    home, demo = _own_home()
    if home_option and not configured.is_dir():
        return Finding(
            "DSH home",
            Status.PROBLEM,
            f"{configured} is not a folder: dshweb serve --home refuses it",
            "name the folder DSH writes (default ~/.dsh)",
        )
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
    home, _ = _own_home()
    if not home.is_dir():
        return Finding("home's files", Status.NOTE, "no home to read")
    problems = [f"{folder} {reason}" for folder, reason in unreadable_folders(home).items()]
    problems += _refused_layers([home_layer(home)])
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
            f"install DSH, or {add_extra('engine')}",
        )
    try:
        done = subprocess.run(
            [str(dsh), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            check=False,
            env={
                "DSH_HOME": str(_own_home()[0]),
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
    home, _ = _own_home()
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


def _dsh_web(*, stored: bool) -> Finding:
    """The ``dsh web`` the Compact button asks (its finding keeps the name ``engine``);
    ``stored``: the database may be read for the one stored there."""
    configured = dsh_web_from_environment()
    if configured is None:
        try:
            row = DshWebSetting.objects.first() if stored else None
        except DatabaseError:  # the table is not made yet
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
