"""Minimal, comment-preserving edits of a DSH patch file (``cordis.patch.yml``, DSH_FACTS §9).

Contract:

- :func:`read_patch` returns the file's text, the sha256 of its bytes and its rows as
  plain Python (``!!js`` scalars become :class:`JsExpr`). A missing file reads as the
  file ``dsh`` creates (:data:`DEFAULT_PATCH_TEXT`) with the sha256 of no bytes.
- :func:`set_row_config` splices new text into the old: only the target row's
  ``config:`` entry changes (inside a block mapping, only the keys whose value
  changed), every other byte stays. The result is parsed again and compared with the
  old rows; if anything but that config would change, it raises instead of returning.
- :func:`write_patch_atomically` is a compare-and-swap on the sha256: a file that
  changed since it was read is left alone and reported with its current text; a
  symbolic link or a read-only file is refused with the reason (:func:`write_refusal`).

Parsing follows YAML 1.2 like DSH's own loader (``yes`` is a string); new strings that
YAML 1.1 would read as something else are quoted anyway.

Modules: :mod:`dshweb.core.profile.patch` (reading, finding a row: the fold reads patch
files too), :mod:`.emit` (values as YAML text), :mod:`.edit` (splicing a row's config),
:mod:`.write` (atomic write, diff). This package re-exports their public API; import it
from here.
"""

from __future__ import annotations

from dshweb.core.profile.patch import (
    DEFAULT_PATCH_TEXT,
    EMPTY_SHA256,
    JS_TAG,
    PatchDocument,
    PatchError,
    PatchRow,
    PatchSyntaxError,
    find_row,
    load_entry_list,
    read_layer,
    read_patch,
    row_config,
)
from dshweb.core.settings.patchfile.edit import set_row_config
from dshweb.core.settings.patchfile.emit import FOLD_WIDTH
from dshweb.core.settings.patchfile.write import (
    NEW_FILE_MODE,
    PatchConflict,
    PatchNotWritable,
    unified_diff,
    write_patch_atomically,
    write_refusal,
)

__all__ = [
    "DEFAULT_PATCH_TEXT",
    "EMPTY_SHA256",
    "FOLD_WIDTH",
    "JS_TAG",
    "NEW_FILE_MODE",
    "PatchConflict",
    "PatchDocument",
    "PatchError",
    "PatchNotWritable",
    "PatchRow",
    "PatchSyntaxError",
    "find_row",
    "load_entry_list",
    "read_layer",
    "read_patch",
    "row_config",
    "set_row_config",
    "unified_diff",
    "write_patch_atomically",
    "write_refusal",
]
