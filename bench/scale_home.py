"""Homes of many sessions for the scale benchmarks, copied from real DSH logs.

Usage: python bench/scale_home.py --size 5000 [--big-copies 3] [--projects 8] [--force]

Every session is a copy of a log the real DSH runtime wrote: the repository's fixture
logs (``tests/fixtures/homes/*/sessions/**/session*.jsonl*``, mostly small), plus
``--big-copies`` copies of one big session: the largest log of ``bench/data/big-home``
when it exists (``bench/make_big_home.py``), else the largest fixture log. Each copy is
a distinct session: its own folder and a new ``id`` in its header (the first zstd frame,
or the first line of a plain log, re-written; every other byte is the source's), its
``cwd`` one of ``--projects`` project folders (filed under that project's key, as DSH
files it), a sub-agent's ``parentSession`` pointing at the copy of its parent made in the
same round, and a file mtime spread over the last 30 days.

Built homes are cached under ``bench/data/scale-<n>/`` (git-ignored) with a
``scale-home.json`` manifest; a cache whose manifest does not match the sources and
options, or that holds another number of logs, is built again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dshweb.core.log.frames import split_frames  # noqa: E402
from dshweb.core.log.home import encode_segment, project_folder, session_logs  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "homes"
BIG_HOME = REPO / "bench" / "data" / "big-home"
DATA = REPO / "bench" / "data"
PROFILES = FIXTURES / "demo-live" / "profiles"
MANIFEST = "scale-home.json"
FORMAT = 1
MTIME_SPREAD_S = 30 * 24 * 3600
_compress = zstandard.ZstdCompressor(write_checksum=True, write_content_size=False).compress


class BuildError(Exception):
    """A home could not be built as asked."""


@dataclass(frozen=True, slots=True)
class BuiltHome:
    """A built home and what is in it (from its manifest)."""

    path: Path
    ids: tuple[str, ...]
    big_ids: tuple[str, ...]
    json_bytes: int
    big_source: str
    big_json_bytes: int

    @classmethod
    def load(cls, path: Path, manifest: dict[str, Any]) -> BuiltHome:
        return cls(
            path,
            tuple(manifest["ids"]),
            tuple(manifest["big_ids"]),
            int(manifest["json_bytes"]),
            str(manifest["big_source"]),
            int(manifest["big_json_bytes"]),
        )


@dataclass(frozen=True, slots=True)
class Template:
    """One real log, split into its header and the bytes after it."""

    path: Path
    header: dict[str, object]
    body: bytes
    compressed: bool
    json_bytes: int

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def parent(self) -> str | None:
        value = self.header.get("parentSession")
        return value if isinstance(value, str) else None

    def with_header(self, header: dict[str, object]) -> bytes:
        line = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        return (_compress(line) if self.compressed else line) + self.body


def read_template(path: Path) -> Template:
    data = path.read_bytes()
    compressed = path.name.endswith(".zstd")
    if compressed:
        chunks, error = split_frames(data, 0)
        if error is not None or not chunks:
            raise BuildError(f"{path}: does not split into zstd frames ({error})")
        header_text, header_end = chunks[0].text, chunks[0].end
        json_bytes = sum(len(c.text) for c in chunks)
    else:
        header_end = data.index(b"\n") + 1
        header_text = data[:header_end]
        json_bytes = len(data)
    lines = header_text.splitlines()
    if len(lines) != 1:
        raise BuildError(f"{path}: the first frame holds {len(lines)} lines, not the header")
    header = json.loads(lines[0])
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        raise BuildError(f"{path}: the first line is not a session header")
    return Template(path, header, data[header_end:], compressed, json_bytes)


def fixture_logs() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/sessions/*/*/session*.jsonl*") if p.is_file())


def big_source() -> Path:
    """The big session: bench/data/big-home's largest log, else the largest fixture log."""
    logs = [log.path for log in session_logs(BIG_HOME)] if BIG_HOME.is_dir() else []
    return max(logs or fixture_logs(), key=lambda p: p.stat().st_size)


def _digest(paths: list[Path]) -> str:
    sha = hashlib.sha256()
    for path in paths:
        st = path.stat()
        sha.update(f"{path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return sha.hexdigest()


def _round_order(templates: list[Template]) -> list[Template]:
    """Parents before their sub-agents, so a round cut short never orphans a child first."""
    ids = {str(t.header["id"]) for t in templates}
    top = [t for t in templates if t.parent not in ids]
    return top + [t for t in templates if t.parent in ids]


def _write(home: Path, template: Template, header: dict[str, object], mtime: float) -> None:
    session_id = str(header["id"])
    cwd = header.get("cwd")
    folder = home / "sessions" / project_folder(cwd if isinstance(cwd, str) else None)
    folder = folder / encode_segment(session_id)
    folder.mkdir(parents=True)
    (folder / "session.lock").touch()
    log = folder / template.name
    log.write_bytes(template.with_header(header))
    os.utime(log, (mtime, mtime))


def build_home(
    size: int,
    *,
    big_copies: int = 3,
    projects: int = 8,
    big: Path | None = None,
    force: bool = False,
) -> BuiltHome:
    """The home of ``size`` sessions, built or taken from the cache; ``big`` is the big
    session's source (default :func:`big_source`; pass one for every home of a run, so
    a big home that appears meanwhile does not change the sources half-way)."""
    if size < big_copies + 1:
        raise BuildError(f"a home of {size} sessions cannot hold {big_copies} big copies")
    out = DATA / f"scale-{size}"
    small_paths, big_path = fixture_logs(), big or big_source()
    options: dict[str, Any] = {
        "format": FORMAT,
        "size": size,
        "big_copies": big_copies,
        "projects": projects,
        "sources": _digest([*small_paths, big_path]),
        "big_source": str(big_path),
    }
    manifest_path = out / MANIFEST
    if not force and manifest_path.is_file():
        cached: dict[str, Any] = json.loads(manifest_path.read_text())
        if {k: cached.get(k) for k in options} == options:
            found = len(session_logs(out))
            if found == size:
                return BuiltHome.load(out, cached)
            print(f"scale_home: {out} holds {found} logs, not {size}; building it again")
    if out.exists():
        shutil.rmtree(out)
    started = time.monotonic()
    small = _round_order([read_template(p) for p in small_paths])
    big_log = read_template(big_path)
    build = out.with_name(out.name + ".building")
    if build.exists():
        shutil.rmtree(build)
    shutil.copytree(PROFILES, build / "profiles")
    rng = random.Random(size)
    now = time.time()
    json_bytes = 0
    ids: list[str] = []
    big_ids: list[str] = []

    def add(template: Template, header: dict[str, object]) -> None:
        nonlocal json_bytes
        _write(build, template, header, now - rng.uniform(0, MTIME_SPREAD_S))
        json_bytes += template.json_bytes
        ids.append(str(header["id"]))

    for k in range(big_copies):
        cwd = f"/home/bench/projects/app-{k % projects}"
        header = dict(big_log.header, id=f"big-{k:03d}", cwd=cwd)
        header.pop("parentSession", None)
        add(big_log, header)
        big_ids.append(str(header["id"]))
    round_no = 0
    while len(ids) < size:
        copies: dict[str, str] = {}
        cwd = f"/home/bench/projects/app-{round_no % projects}"
        for template in small:
            if len(ids) >= size:
                break
            source_id = str(template.header["id"])
            new_id = f"s{round_no:04d}-{source_id}"
            copies[source_id] = new_id
            header = dict(template.header, id=new_id, cwd=cwd)
            if template.parent is not None:
                header["parentSession"] = copies.get(template.parent, template.parent)
            add(template, header)
        round_no += 1
    found = len(session_logs(build))
    if found != size or len(set(ids)) != size:
        raise BuildError(f"built {found} logs ({len(set(ids))} distinct ids), {size} asked")
    manifest: dict[str, Any] = {
        **options,
        "sessions": size,
        "json_bytes": json_bytes,
        "big_ids": big_ids,
        "big_zstd_bytes": big_log.path.stat().st_size,
        "big_json_bytes": big_log.json_bytes,
        "small_sources": len(small),
        "ids": ids,
    }
    (build / MANIFEST).write_text(json.dumps(manifest, indent=1))
    build.rename(out)
    print(
        f"scale_home: built {out}: {size} sessions ({big_copies} copies of {big_log.path}, "
        f"{big_log.path.stat().st_size / 1e6:.2f} MB zstd; {len(small)} fixture logs in "
        f"{round_no} rounds), {json_bytes / 1e6:.1f} MB of JSON, "
        f"{time.monotonic() - started:.1f} s"
    )
    return BuiltHome.load(out, manifest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--big-copies", type=int, default=3)
    parser.add_argument("--projects", type=int, default=8)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    try:
        home = build_home(
            args.size, big_copies=args.big_copies, projects=args.projects, force=args.force
        )
    except BuildError as error:
        sys.exit(f"scale_home: {error}")
    print(f"{home.path}: {len(home.ids)} sessions, {home.json_bytes / 1e6:.1f} MB of JSON")


if __name__ == "__main__":
    main()
