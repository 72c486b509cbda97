"""A session's fold state kept across restarts: dump a tracker, load it, fold only what follows.

:func:`dump_checkpoint` writes a :class:`~dshweb.core.fold.session.SessionTracker`'s whole fold
state (the tail's offset, file identity, next seq and sticky error; the meter, activity,
pace, ledger, what the model was told, the cost and the requests' sizes; the header,
error and ``stop_after_seq``) as one blob::

    tag "\\n" | HMAC-SHA256(key, tag "\\n" body) | body = zstd(pickle(state))

The tag names :data:`CHECKPOINT_VERSION`, dshweb's package version and a digest of the
log reader's and the fold's source (:data:`FOLD_SOURCES`), so a blob from any other code
(whose fold might differ) is refused rather than trusted. The signature is checked before
anything is decompressed or unpickled, so a tampered row cannot run code; the unpickler
also builds only the fold's own state classes, whatever the key.

:func:`restore_checkpoint` gives the tracker back only while the log is provably the one
folded: same path, same file (device and inode), at least as long as the offset, and
the same first bytes and last bytes before the offset (:data:`FINGERPRINT_SPAN` of each,
hashed). Otherwise it names a :class:`Refusal` and the caller folds from byte 0.
The tracker it gives back has a fresh ``version``, and its next ``refresh()`` folds only
what was appended since the dump (a torn frame at the dump is read once it is whole).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import hmac
import importlib
import importlib.metadata
import io
import os
import pickle
import secrets
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from dshweb.core.errors import LogError
from dshweb.core.files import FileRefused
from dshweb.core.fold.cost import CostCollector
from dshweb.core.fold.ledger import LedgerCollector
from dshweb.core.fold.meter import SessionMeter
from dshweb.core.fold.pace import PaceCollector
from dshweb.core.fold.point import StepBand
from dshweb.core.fold.request_sizes import RequestSizesCollector
from dshweb.core.fold.session import Activity, SessionTracker
from dshweb.core.fold.told import ToldCollector
from dshweb.core.log.frames import decompressor
from dshweb.core.log.home import LogFile
from dshweb.core.log.reader import open_log

CHECKPOINT_VERSION = 17
"""Raise it whenever the state's shape or meaning changes."""

FINGERPRINT_SPAN = 4 << 10
"""How many bytes at the start of the log and just before the offset are hashed to tell an
in-place rewrite: the header and the newest frames (a restart reads twice this per
session: 5,000 sessions read 40 MB)."""

_MAC_SIZE = hashlib.sha256().digest_size
_STATE_MODULES = frozenset(
    {
        "dshweb.core.fold.checkpoint",
        "dshweb.core.fold.cost",
        "dshweb.core.fold.compactions",
        "dshweb.core.fold.ledger",
        "dshweb.core.fold.meter",
        "dshweb.core.fold.gauge",
        "dshweb.core.fold.pace",
        "dshweb.core.fold.point",
        "dshweb.core.fold.pricing",
        "dshweb.core.fold.request_sizes",
        "dshweb.core.fold.revealed",
        "dshweb.core.fold.session",
        "dshweb.core.fold.told",
    }
)
"""Where the classes a checkpoint may hold live (the unpickler builds no other)."""


class Refusal(enum.StrEnum):
    """Why a checkpoint was not used (the caller folds the log from byte 0)."""

    FORMAT = "written by another dshweb or checkpoint format"
    SIGNATURE = "signature does not match"
    CORRUPT = "not a readable checkpoint"
    OTHER_LOG = "made for another log file"
    UNREADABLE = "log cannot be read"
    REPLACED = "log file was replaced"
    TRUNCATED = "log is shorter than the checkpoint's offset"
    REWRITTEN = "log's bytes before the offset changed"


@dataclass(frozen=True, slots=True)
class _State:
    path: str
    version: int
    compressed: bool
    stop_after_seq: int | None
    offset: int
    identity: tuple[int, int] | None
    next_seq: int
    tail_error: tuple[str, int, int | None] | None
    """The tail's sticky error as (text, offset, seq)."""
    size: int | None
    """The log's size at the dump (for diagnostics: how far the tail lagged)."""
    fingerprint: bytes | None
    """Digest of the bytes before ``offset``; None when the log on disk at the dump was
    not the one folded (such a checkpoint is never used)."""
    meter: SessionMeter
    activity: Activity
    pace: PaceCollector
    step_band: StepBand
    ledger: LedgerCollector
    told: ToldCollector
    cost: CostCollector
    requests: RequestSizesCollector
    header: dict[str, Any]
    error: str | None


@functools.cache
def _package_version() -> str:
    try:
        return importlib.metadata.version("dshweb")
    except importlib.metadata.PackageNotFoundError:  # a checkout that was never installed
        return "unknown"


FOLD_SOURCES = ("errors.py", "log/*.py", "fold/*.py")
"""The code whose output a checkpoint holds, under ``dshweb/core/``: reading the log and
folding it."""


def _source_digest() -> str:
    """A digest of the fold's source as this process imported it: any change to the fold's
    code (even one the package version does not show, in a working tree) invalidates
    every checkpoint. Taken at import, so an edit made while dshweb runs is not mistaken
    for the code that folded."""
    digest = hashlib.sha256()
    core = Path(__file__).resolve().parent.parent
    sources = {source for pattern in FOLD_SOURCES for source in core.glob(pattern)}
    for source in sorted(sources):
        digest.update(source.relative_to(core).as_posix().encode() + b"\0")
        try:
            digest.update(source.read_bytes())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()[:16]


_CORE_DIGEST = _source_digest()


def checkpoint_tag(version: int = CHECKPOINT_VERSION) -> bytes:
    """The first line of every blob this code writes (with the given format version)."""
    return f"dshweb-checkpoint {version} dshweb {_package_version()} core {_CORE_DIGEST}\n".encode()


def seal(body: bytes, *, key: bytes, tag: bytes | None = None) -> bytes:
    """``body`` framed and signed as a checkpoint blob (``tag`` defaults to this code's)."""
    head = checkpoint_tag() if tag is None else tag
    return head + _mac(key, head, body) + body


def _mac(key: bytes, tag: bytes, body: bytes) -> bytes:
    if not key:
        raise ValueError("a checkpoint needs a non-empty key")
    return hmac.new(key, tag + body, hashlib.sha256).digest()


def _fingerprint(fd: int, offset: int) -> bytes:
    """The first and the last :data:`FINGERPRINT_SPAN` bytes before ``offset``, hashed:
    the session's header and its newest frames."""
    head = os.pread(fd, min(offset, FINGERPRINT_SPAN), 0)
    start = max(0, offset - FINGERPRINT_SPAN)
    tail = os.pread(fd, offset - start, start)
    if len(head) != min(offset, FINGERPRINT_SPAN) or len(tail) != offset - start:
        raise OSError("short read")
    return hashlib.sha256(head + b"\0" + tail).digest()


def dump_checkpoint(tracker: SessionTracker, *, key: bytes) -> bytes:
    """The tracker's whole fold state as a signed blob for :func:`restore_checkpoint`;
    a ``ValueError`` for a tail folded to the middle of a frame (no offset resumes it)."""
    tail = tracker.tail
    if tail.mid_frame:
        raise ValueError(f"{tail.path} is folded to the middle of a frame: no checkpoint")
    size: int | None = None
    fingerprint: bytes | None = None
    try:
        fd = open_log(tail.path)
        try:
            st = os.fstat(fd)
            size = st.st_size
            if (st.st_dev, st.st_ino) == tail.identity and size >= tail.offset:
                fingerprint = _fingerprint(fd, tail.offset)
        finally:
            os.close(fd)
    except (OSError, FileRefused):
        pass  # no fingerprint: this checkpoint will be refused, and the log refolded
    error = tail.error
    state = _State(
        path=str(tracker.log.path),
        version=tracker.log.version,
        compressed=tracker.log.compressed,
        stop_after_seq=tracker.stop_after_seq,
        offset=tail.offset,
        identity=tail.identity,
        next_seq=tail.next_seq,
        tail_error=(str(error), error.offset, error.seq) if error is not None else None,
        size=size,
        fingerprint=fingerprint,
        meter=tracker.meter,
        activity=tracker.activity,
        pace=tracker.pace,
        step_band=tracker.step_band,
        ledger=tracker.ledger,
        told=tracker.told,
        cost=tracker.cost,
        requests=tracker.requests,
        header=tracker.header,
        error=tracker.error,
    )
    out = io.BytesIO()
    _StatePickler(out, protocol=5).dump(state)
    body = zstandard.ZstdCompressor(level=3).compress(out.getvalue())
    return seal(body, key=key)


@functools.cache
def _state_class(module: str, name: str) -> type | None:
    if module not in _STATE_MODULES:
        return None
    found = getattr(importlib.import_module(module), name, None)
    if not isinstance(found, type):
        return None
    # The state dataclasses, and enums (a band): built from their value, nothing else.
    return found if dataclasses.is_dataclass(found) or issubclass(found, enum.Enum) else None


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def _state_fields(cls: type) -> tuple[str, ...]:
    """The field names of a state dataclass (checked to be one once per class)."""
    if _state_class(cls.__module__, cls.__qualname__) is not cls:
        raise pickle.UnpicklingError(f"{cls!r} is not checkpoint state")
    return _field_names(cls)


def _rebuild(cls: type, values: tuple[Any, ...]) -> Any:
    """A state dataclass from its field values, without ``__init__`` (as pickle's own
    ``__setstate__`` does, but with the class checked once and each field set by its own
    slot: a restart rebuilds a hundred thousand of them)."""
    return _builder(cls)(values)


@functools.cache
def _builder(cls: type) -> Callable[[tuple[Any, ...]], Any]:
    """A function that builds ``cls`` (a state dataclass) from its field values, each
    set through its slot's descriptor (``object.__setattr__`` where it has none), and
    refuses another number of values; written once per class."""
    names = _state_fields(cls)
    scope: dict[str, Any] = {"new": object.__new__, "cls": cls, "put": object.__setattr__}
    lines = ["def build(values):", "    instance = new(cls)"]
    if names:
        lines.append("    " + "".join(f"v{i}, " for i in range(len(names))) + "= values")
    else:
        lines.append("    () = values")
    for i, name in enumerate(names):
        slot = cls.__dict__.get(name)
        if isinstance(slot, types.MemberDescriptorType):
            scope[f"set{i}"] = slot.__set__
            lines.append(f"    set{i}(instance, v{i})")
        else:
            lines.append(f"    put(instance, {name!r}, v{i})")
    lines.append("    return instance")
    exec("\n".join(lines), scope)  # the class's own field names, as dataclasses does
    built: Callable[[tuple[Any, ...]], Any] = scope["build"]
    return built


class _StatePickler(pickle.Pickler):
    """Writes each state dataclass as :func:`_rebuild` of its field values: a restart
    loads thousands of them, and pickle's generic dataclass path costs twice as much."""

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        if dataclasses.is_dataclass(cls) and _state_class(cls.__module__, cls.__qualname__):
            return _rebuild, (cls, tuple(getattr(obj, n) for n in _field_names(cls)))
        return NotImplemented


def enum_member(cls: object, name: object) -> enum.Enum:
    """An enum's member by name: what an unpickler is asked for as ``builtins.getattr``
    where Python pickled enum members so (some 3.11 releases, Debian 12's 3.11.2 among
    them; later ones pickle them by value). ``cls`` is what the unpickler's own
    ``find_class`` allowed; anything but a member of an enum is refused."""
    if (
        isinstance(cls, type)
        and issubclass(cls, enum.Enum)
        and isinstance(name, str)
        and name in cls.__members__
    ):
        return cls[name]
    raise pickle.UnpicklingError(f"getattr({cls!r}, {name!r}) is not an enum's member")


ENUM_BY_NAME = ("builtins", "getattr")
"""The ``find_class`` an enum member pickled by name asks for (:func:`enum_member`)."""


class _StateUnpickler(pickle.Unpickler):
    """Builds plain values and the core's state dataclasses, nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "_rebuild":
            return _rebuild
        if (module, name) == ENUM_BY_NAME:
            return enum_member
        found = _state_class(module, name)
        if found is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not checkpoint state")
        return found


def unseal(blob: bytes, *, key: bytes, tag: bytes | None = None) -> bytes | Refusal:
    """The body :func:`seal` framed in ``blob``, once its tag (default this code's) and
    signature check out; else why not."""
    head = checkpoint_tag() if tag is None else tag
    if not blob.startswith(head):
        return Refusal.FORMAT
    mac, body = blob[len(head) : len(head) + _MAC_SIZE], blob[len(head) + _MAC_SIZE :]
    if not hmac.compare_digest(mac, _mac(key, head, body)):
        return Refusal.SIGNATURE
    return body


def _unseal(blob: bytes, key: bytes) -> _State | Refusal:
    body = unseal(blob, key=key)
    if isinstance(body, Refusal):
        return body
    try:
        state = _StateUnpickler(io.BytesIO(decompressor().decompress(body))).load()
    except Exception:  # a signed blob this code cannot read: nothing to trust in it
        return Refusal.CORRUPT
    return state if type(state) is _State else Refusal.CORRUPT


def restore_checkpoint(log: LogFile, blob: bytes, *, key: bytes) -> SessionTracker | Refusal:
    """The tracker ``blob`` holds, ready to fold what ``log`` gained since; or why not."""
    state = _unseal(blob, key)
    if isinstance(state, Refusal):
        return state
    if (state.path, state.version, state.compressed) != (
        str(log.path),
        log.version,
        log.compressed,
    ):
        return Refusal.OTHER_LOG
    try:
        fd = open_log(log.path)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != state.identity:  # open_log opens regular files only
                return Refusal.REPLACED
            if st.st_size < state.offset:
                return Refusal.TRUNCATED
            if state.fingerprint is None or not hmac.compare_digest(
                _fingerprint(fd, state.offset), state.fingerprint
            ):
                return Refusal.REWRITTEN
        finally:
            os.close(fd)
    except (OSError, FileRefused):
        return Refusal.UNREADABLE
    tracker = SessionTracker(log, stop_after_seq=state.stop_after_seq)
    tail = tracker.tail
    tail.offset, tail.identity, tail.next_seq = state.offset, state.identity, state.next_seq
    if state.tail_error is not None:
        text, offset, seq = state.tail_error
        tail.error = LogError("", offset=offset, seq=seq)
        tail.error.args = (text,)  # the text as it was formatted when the error arose
    elif state.size is not None:  # the bytes past the last whole frame, as the dump saw them
        tail.pending = max(0, state.size - state.offset)
    tracker.meter, tracker.activity = state.meter, state.activity
    tracker.pace, tracker.ledger, tracker.told = state.pace, state.ledger, state.told
    tracker.cost, tracker.requests = state.cost, state.requests
    tracker.step_band = state.step_band
    tracker.header, tracker.error = state.header, state.error
    tracker.touch()
    return tracker


def load_checkpoint(log: LogFile, blob: bytes, *, key: bytes) -> SessionTracker | None:
    """:func:`restore_checkpoint` without the reason: None means fold from byte 0."""
    found = restore_checkpoint(log, blob, key=key)
    return found if isinstance(found, SessionTracker) else None


@dataclass(frozen=True, slots=True)
class CheckpointCodec:
    """Trackers to signed checkpoints and back with one key: how an index parks the
    sessions nothing changes (:meth:`~dshweb.core.fold.index.HomeIndex.park`)."""

    key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    def encode(self, tracker: SessionTracker) -> bytes:
        return dump_checkpoint(tracker, key=self.key)

    def decode(self, log: LogFile, blob: bytes) -> SessionTracker | None:
        return load_checkpoint(log, blob, key=self.key)
