"""Wheels of the distributions a wheel needs, taken from this interpreter's environment,
for a pip install that needs no index: ``pip install --no-index --find-links FOLDER``.

Each installed distribution (pip installed it from a wheel: its ``.dist-info`` has the
``WHEEL`` file and the ``RECORD`` of every file) is packed again as the wheel it came
from: the same files under the same names, the same metadata and tags, a ``RECORD`` of
their hashes. Its scripts are left out (pip writes them again from
``entry_points.txt``), and so are compiled files and pip's own records of the install.
An editable install (this checkout's dshweb) is not a wheel and is skipped. The wheels
are stored, not compressed (pip unpacks them at once; packing is the cost here).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

_INSTALL_RECORDS = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def _tag(wheel_file: str) -> str:
    """The compressed tag of a ``WHEEL`` file's ``Tag:`` lines (``cp311-cp311-a.b``)."""
    tags = [
        line.split(":", 1)[1].strip() for line in wheel_file.splitlines() if line.startswith("Tag:")
    ]
    parts = [sorted({tag.split("-")[i] for tag in tags}) for i in range(3)]
    return "-".join(".".join(part) for part in parts)


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def repack(dist: metadata.Distribution, into: Path) -> Path | None:
    """``dist`` as a wheel in ``into`` (None: not installed from a wheel)."""
    wheel_file = dist.read_text("WHEEL")
    if wheel_file is None or dist.files is None or dist.read_text("direct_url.json"):
        return None
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    target = into / f"{name}-{dist.version}-{_tag(wheel_file)}.whl"
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    dist_info = ""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as wheel:
        for file in dist.files:
            path = file.as_posix()
            top, _, leaf = path.partition("/")
            if (
                path.startswith("../")
                or "__pycache__" in file.parts
                or path.endswith(".pyc")
                or (top.endswith(".dist-info") and leaf in _INSTALL_RECORDS)
            ):
                continue
            if top.endswith(".dist-info"):
                dist_info = top
            data = Path(str(dist.locate_file(file))).read_bytes()
            wheel.writestr(path, data)
            writer.writerow([path, _digest(data), len(data)])
        writer.writerow([f"{dist_info}/RECORD", "", ""])
        wheel.writestr(f"{dist_info}/RECORD", record.getvalue())
    return target


def needed(wheel: Path, extras: set[str]) -> set[str]:
    """The canonical names of the distributions ``wheel`` (with ``extras``) needs here,
    its requirements and theirs, as this interpreter's markers select them."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        text = archive.read(name).decode()
    wanted = [
        Requirement(line.split(":", 1)[1].strip())
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    found: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [(req, extras) for req in wanted]
    while pending:
        requirement, asked = pending.pop()
        marker = requirement.marker
        if marker is not None and not any(
            marker.evaluate({"extra": extra}) for extra in (asked or {""})
        ):
            continue
        key = canonicalize_name(requirement.name)
        if (key, frozenset(requirement.extras)) in seen:
            continue
        seen.add((key, frozenset(requirement.extras)))
        found.add(key)
        dist = metadata.distribution(requirement.name)
        pending.extend((Requirement(line), set(requirement.extras)) for line in dist.requires or [])
    return found


def wheelhouse(into: Path, wheel: Path, extras: set[str]) -> list[Path]:
    """What ``wheel`` with ``extras`` needs, from this environment's site-packages, packed
    as wheels in ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    site = sysconfig.get_paths()["purelib"]
    wanted = needed(wheel, extras)
    made = (
        repack(dist, into)
        for dist in metadata.distributions(path=[site])
        if canonicalize_name(dist.metadata["Name"]) in wanted
    )
    return [wheel for wheel in made if wheel is not None]
