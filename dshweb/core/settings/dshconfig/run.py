"""Running the real ``dsh`` for what only it knows: the composed tree and the schema.

Contract: :func:`find_dsh` locates the executable. :func:`dump_config` and
:func:`dump_config_schema` run it on a home with ``DSH_HOME`` set and telemetry off,
inside a timeout; any failure (not found, timed out, non-zero exit, output that is not
what was asked for) raises :class:`DshConfigError` carrying what ``dsh`` said on
stderr without the JavaScript stack. A profile folder that does not exist is an error
unless ``create=True`` lets ``dsh`` create a shipped profile.

Reading changes nothing on disk: ``dsh`` rewrites a profile's ``cordis.yml`` (and may
write other files of the profile) whenever it composes it, so without ``create=True``
it runs on a scratch home: the profile's own files copied, everything else (patch
files, folders, the rest of the home) linked, so the layers it names are the real ones.

``dsh`` reads a file as it finds it, and would wait for ever on a FIFO: the patch layers
and ``package.json`` are first read the way dshweb reads them (:mod:`dshweb.core.files`),
and one dshweb refuses is the run's error, naming the file, before ``dsh`` starts. Only
regular files of the profile are copied (at most :data:`COPY_LIMIT` bytes each) and only
folders linked: a FIFO, a device or a link there is left out of the scratch home.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from dshweb.core.files import FileRefused, read_file
from dshweb.core.profile.patch import PatchError, PatchSyntaxError, read_layer
from dshweb.core.profile.profile import (
    MANIFEST_LIMIT,
    PACKAGE_FILE,
    PATCH_FILE,
    patch_layers,
    profile_folder,
)
from dshweb.core.settings.dshconfig.composed import ComposedConfig, parse_dump
from dshweb.core.settings.dshconfig.errors import DshConfigError

DUMP_TIMEOUT = 60.0
SCHEMA_TIMEOUT = 120.0
COPY_LIMIT = 16 << 20
"""The largest file of a profile copied into the scratch home."""


def find_dsh() -> Path | None:
    """``dsh`` on PATH, else the one installed beside the running Python (a venv's bin)."""
    found = shutil.which("dsh")
    if found:
        return Path(found)
    beside = Path(sys.executable).with_name("dsh")
    return beside if beside.is_file() and os.access(beside, os.X_OK) else None


def _problem(stderr: str) -> str:
    """What ``dsh`` said, without the JavaScript stack."""
    lines = [line for line in stderr.splitlines() if not line.lstrip().startswith("at ")]
    return "\n".join(line for line in lines if line.strip())[-2000:]


def _run_dsh(
    dsh: Path, home: Path, args: Sequence[str], timeout: float, *, any_exit: bool = False
) -> tuple[str, str]:
    env = dict(os.environ)
    env.update(DSH_HOME=str(home), DSH_TELEMETRY_MODE="DISABLED")
    argv = [str(dsh), *args]
    try:
        done = subprocess.run(
            argv, env=env, cwd=home, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError as error:
        raise DshConfigError(f"cannot run {dsh}: not found") from error
    except subprocess.TimeoutExpired as error:
        raise DshConfigError(f"`{' '.join(args)}` did not finish within {timeout:g} s") from error
    except OSError as error:
        raise DshConfigError(f"cannot run {dsh}: {error.strerror}") from error
    if done.returncode != 0 and not (any_exit and done.stdout.strip()):
        said = _problem(done.stderr) or "(nothing on stderr)"
        raise DshConfigError(f"`dsh {' '.join(args)}` failed (exit {done.returncode}):\n{said}")
    return done.stdout, done.stderr


def _check_files(home: Path, profile: str, patches: Sequence[Path]) -> None:
    """Raise :class:`DshConfigError` naming the first file ``dsh`` would read that dshweb
    refuses (a FIFO, a device, a link inside the home, too big, unreadable)."""
    try:
        for layer in patch_layers(home, profile, patches):
            with suppress(PatchSyntaxError):  # dsh says what is wrong with it, in its words
                read_layer(layer)
        read_file(profile_folder(home, profile) / PACKAGE_FILE, limit=MANIFEST_LIMIT, home=home)
    except (PatchError, FileRefused) as refused:
        raise DshConfigError(f"dsh was not run: {refused}") from refused


@contextmanager
def _reading_home(home: Path, profile: str, *, create: bool) -> Iterator[Path]:
    """The home ``dsh`` may run on: ``home`` itself with ``create=True``, else a scratch
    home where only links and copies can be written to (removed afterwards)."""
    if create:
        yield home
        return
    with tempfile.TemporaryDirectory(prefix="dshweb-dsh-") as scratch:
        root = Path(scratch)
        for path in home.iterdir():
            if path.name != "profiles":
                (root / path.name).symlink_to(path)
        source, target = profile_folder(home, profile), profile_folder(root, profile)
        target.mkdir(parents=True)
        with os.scandir(source) as entries:
            for entry in entries:
                _stage(home, Path(entry.path), entry, target / entry.name)
        yield root  # dsh names the layers it read under this root: the callers map it back


def _stage(home: Path, path: Path, entry: os.DirEntry[str], staged: Path) -> None:
    """Put one entry of the profile folder into the scratch profile: a folder and the
    patch file (read already) linked, a regular file copied, anything else left out."""
    if entry.is_dir(follow_symlinks=False) or entry.name == PATCH_FILE:
        staged.symlink_to(path)
    elif entry.is_file(follow_symlinks=False):
        try:
            data = read_file(path, limit=COPY_LIMIT, home=home)
        except FileRefused as refused:
            raise DshConfigError(f"dsh was not run: {refused}") from refused
        if data is not None:
            staged.write_bytes(data)


def _profile_dir(home: Path, profile: str, *, create: bool) -> Path:
    folder = profile_folder(home, profile)
    if not create and not folder.is_dir():
        raise DshConfigError(f"profile {profile!r} does not exist in {home}")
    return folder


def dump_config(
    home: Path,
    profile: str,
    *,
    dsh: Path,
    patches: Sequence[Path] = (),
    create: bool = False,
    timeout: float = DUMP_TIMEOUT,
) -> ComposedConfig:
    """``dsh --profile <profile> --dump-config`` on ``home``, parsed.

    ``patches`` are extra ``--patch`` overlays (applied last). ``dsh`` creates a shipped
    profile (``sdk``, ``web``, …) that does not exist yet; that happens only with
    ``create=True``, otherwise a missing profile folder is an error.
    """
    _profile_dir(home, profile, create=create)
    _check_files(home, profile, patches)
    args = ["--profile", profile, "--dump-config"]
    for patch in patches:
        args += ["--patch", str(patch)]
    with _reading_home(home, profile, create=create) as where:
        out, err = _run_dsh(dsh, where, args, timeout)
    out, err = out.replace(str(where), str(home)), err.replace(str(where), str(home))
    warnings = [line.strip() for line in err.splitlines() if line.strip()]
    return parse_dump(out, warnings=warnings, profile=profile)


def dump_config_schema(
    home: Path, profile: str, *, dsh: Path, create: bool = False, timeout: float = SCHEMA_TIMEOUT
) -> dict[str, Any]:
    """``dsh --profile <profile> --dump-config-schema`` (it needs a profile: the schema
    lists that profile's rows and their config schemas).

    ``dsh`` exits 1 whenever a module of the profile cannot be imported (the stock web
    profile always has two) yet prints the whole schema; those problems are in
    ``schema["x-cordis"]["diagnostics"]``, and only a run without a schema fails.
    """
    _profile_dir(home, profile, create=create)
    _check_files(home, profile, ())
    args = ["--profile", profile, "--dump-config-schema"]
    with _reading_home(home, profile, create=create) as where:
        out, err = _run_dsh(dsh, where, args, timeout, any_exit=True)
    out, err = out.replace(str(where), str(home)), err.replace(str(where), str(home))
    try:
        schema = json.loads(out)
    except ValueError as error:
        said = _problem(err) or "(nothing on stderr)"
        raise DshConfigError(f"`dsh {' '.join(args)}` printed no JSON:\n{said}") from error
    if not isinstance(schema, dict) or "patchList" not in schema.get("$defs", {}):
        raise DshConfigError("dsh --dump-config-schema printed no patch schema")
    return schema
