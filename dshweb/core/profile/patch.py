"""Reading a patch file: its text, its sha256 and its rows as plain Python.

Contract:

- :func:`read_patch` returns the file's text, the sha256 of its bytes and its rows
  (``!!js`` scalars become :class:`JsExpr`). A missing file reads as the file ``dsh``
  creates (:data:`DEFAULT_PATCH_TEXT`) with the sha256 of no bytes; one that does not
  parse raises :class:`PatchSyntaxError` with a 1-based line and column. It is read
  through :mod:`dshweb.core.files` (a regular file of at most :data:`PATCH_LIMIT` bytes,
  no link inside the home): anything else raises :class:`PatchError` naming the file.
- :func:`find_row` names the row that decides a row id's config: the last one that has
  a ``config`` key, else the last one naming the id (top level or inside ``- insert:``).
- :meth:`PatchDocument.inserted_rows` lists the rows the file's ``- insert:`` lists add,
  typed (:class:`InsertedRow`: its id, its module, whether that is context-truth).
- Rows are read exactly as DSH reads them (:mod:`dshweb.core.profile.dshyaml`: js-yaml's JSON
  schema, ``yes`` and ``1_000`` are strings, duplicate keys are errors), and the editor
  splices into the node tree those rows were built from: one parse, DSH's. The editor
  (:mod:`dshweb.core.settings.patchfile`) shares :func:`parse_patch` (rows and node tree),
  :func:`locate_row` and :func:`sha256_hex`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dshweb.core.errors import DshError
from dshweb.core.files import FileRefused, read_file
from dshweb.core.profile.dshyaml import DshYamlError, check_patch_rows, compose_yaml, construct
from dshweb.core.profile.profile import CONTEXT_TRUTH_PACKAGE, Layer

if TYPE_CHECKING:
    from yaml.nodes import SequenceNode

DEFAULT_PATCH_TEXT = (
    "# Your patch layer for this dsh profile, applied after every bundle layer:\n"
    "# a top-level YAML array of loader patch entries (id-targeted config\n"
    "# overrides, disables, and insert lists; `!!js` expressions allowed).\n"
    "[]\n"
)
"""What ``dsh`` writes into a new profile's ``cordis.patch.yml``."""

PATCH_LIMIT = 4 << 20
"""The largest patch file read (DSH's own are a few KB; the largest seen, 60 KB)."""

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
"""The sha256 a missing file reads with."""

JS_TAG = "tag:yaml.org,2002:js"


class PatchError(DshError):
    """A patch file that cannot be read or edited as asked."""


class PatchSyntaxError(PatchError):
    """The file is not valid YAML; ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, *, line: int, column: int) -> None:
        super().__init__(f"{message} at line {line}, column {column}")
        self.line = line
        self.column = column


@dataclass(frozen=True, slots=True)
class InsertedRow:
    """One row inside the ``- insert:`` list of top-level row ``index`` (at ``insert_index``).

    ``name`` is its module specifier: the package that runs, whatever its ``id``.
    """

    id: str | None
    name: str | None
    index: int
    insert_index: int

    @property
    def is_context_truth(self) -> bool:
        """The row mounts ``dsh-context-truth``."""
        return self.name == CONTEXT_TRUTH_PACKAGE


@dataclass(frozen=True, slots=True)
class PatchDocument:
    path: Path | None
    text: str
    sha256: str
    exists: bool
    rows: tuple[Any, ...]
    not_utf8: str | None = None
    """Why the file must not be rewritten: bytes that are not UTF-8, which ``text`` shows
    as U+FFFD (as DSH reads them) and a rewrite would lose; None when it is UTF-8."""

    def inserted_rows(self) -> tuple[InsertedRow, ...]:
        """Every row the file's ``- insert:`` lists add, in file order."""
        return tuple(
            InsertedRow(
                item.get("id") if isinstance(item.get("id"), str) else None,
                item.get("name") if isinstance(item.get("name"), str) else None,
                index,
                inner,
            )
            for index, row in enumerate(self.rows)
            if isinstance(row, dict) and isinstance(row.get("insert"), list)
            for inner, item in enumerate(row["insert"])
            if isinstance(item, dict)
        )


@dataclass(frozen=True, slots=True)
class PatchRow:
    """One row of a patch file that targets or inserts ``id``.

    ``where`` is ``"top"`` for a top-level ``- id:`` row (``index`` is its position)
    and ``"insert"`` for a row inside the ``- insert:`` list at ``index``
    (``insert_index`` is its position there).
    """

    id: str
    where: Literal["top", "insert"]
    index: int
    insert_index: int | None
    data: Mapping[str, Any]

    @property
    def config(self) -> dict[str, Any] | None:
        config = self.data.get("config")
        return dict(config) if isinstance(config, dict) else None


@dataclass(frozen=True, slots=True)
class ParsedPatch:
    root: SequenceNode | None
    """``None`` only for a text with no document (``parse_patch(..., empty_ok=True)``)."""
    rows: tuple[Any, ...]


def parse_patch(text: str, name: str = "patch", *, empty_ok: bool = False) -> ParsedPatch:
    """The rows as DSH reads them, and the node tree they were built from.

    A text with no document at all (empty, or comments only) is refused as DSH refuses
    it, unless ``empty_ok`` (the editor, about to write the first row, says so)."""
    try:
        root = compose_yaml(text)
        if root is None and empty_ok:
            return ParsedPatch(None, ())
        rows = check_patch_rows(None if root is None else construct(root))
    except DshYamlError as error:
        if error.line is None or error.column is None:
            raise PatchError(f"{name}: {error.reason}") from None
        raise PatchSyntaxError(
            f"{name}: {error.reason}", line=error.line, column=error.column
        ) from None
    from yaml.nodes import SequenceNode  # compose_yaml has imported it

    assert isinstance(root, SequenceNode)
    return ParsedPatch(root, tuple(rows))


def load_entry_list(text: str, name: str = "patch") -> tuple[list[Any], list[int]]:
    """The rows of an entry or patch list as plain values, and the 0-based line where
    each row starts (to pair rows with the comments ``dsh --dump-config`` puts above)."""
    parsed = parse_patch(text, name)
    assert parsed.root is not None
    return list(parsed.rows), [int(n.start_mark.line) for n in parsed.root.value]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_patch(
    path: Path, *, home: Path | None = None, follow_links: bool = False
) -> PatchDocument:
    """The patch file at ``path``; raises :class:`PatchSyntaxError` if it does not parse.

    ``home``: the DSH home ``path`` lies in (no link below it is followed);
    ``follow_links``: a ``--patch`` overlay a person named, read wherever it leads."""
    try:
        data = read_file(path, limit=PATCH_LIMIT, home=home, follow_links=follow_links)
    except FileRefused as refused:
        raise PatchError(str(refused)) from refused
    if data is None:
        return PatchDocument(path, DEFAULT_PATCH_TEXT, EMPTY_SHA256, False, ())
    text = data.decode("utf-8", "replace")  # as DSH reads it: a bad byte is U+FFFD
    rows = parse_patch(text, str(path)).rows
    return PatchDocument(path, text, sha256_hex(data), True, rows, utf8_problem(data, path.name))


def read_layer(layer: Layer) -> PatchDocument:
    """One patch layer: no link below its home followed; an overlay a person named is
    read wherever it leads."""
    return read_patch(layer.path, home=layer.home, follow_links=layer.home is None)


def utf8_problem(data: bytes, name: str) -> str | None:
    """Why the file ``name`` holding ``data`` must not be rewritten for not being UTF-8,
    or None when it is."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        return (
            f"{name} is not valid UTF-8 (byte 0x{data[error.start]:02x} on line {line}): "
            "a save from here would replace such bytes, so dshweb leaves the file as it is. "
            "Save it as UTF-8 in an editor to change it here."
        )
    return None


def locate_row(rows: Sequence[Any], row_id: str) -> tuple[int, int | None] | None:
    """Where the row that decides ``row_id``'s config is: the last one that has a
    ``config`` key, else the last one naming ``row_id``."""
    found: list[tuple[int, int | None, bool]] = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        inserted = row.get("insert")
        if isinstance(inserted, list):
            for inner, item in enumerate(inserted):
                if isinstance(item, dict) and item.get("id") == row_id:
                    found.append((index, inner, "config" in item))
        elif row.get("id") == row_id:
            found.append((index, None, "config" in row))
    with_config = [f for f in found if f[2]]
    candidates = with_config or found
    return (candidates[-1][0], candidates[-1][1]) if candidates else None


def find_row(doc: PatchDocument, row_id: str) -> PatchRow | None:
    """The row of ``doc`` that sets ``row_id``'s config (see :func:`set_row_config`)."""
    where = locate_row(doc.rows, row_id)
    if where is None:
        return None
    index, inner = where
    data = doc.rows[index] if inner is None else doc.rows[index]["insert"][inner]
    return PatchRow(row_id, "top" if inner is None else "insert", index, inner, data)


def row_config(doc: PatchDocument, row_id: str) -> dict[str, Any] | None:
    """The ``config`` this file gives ``row_id`` (``None``: the file sets none)."""
    row = find_row(doc, row_id)
    return None if row is None else row.config
