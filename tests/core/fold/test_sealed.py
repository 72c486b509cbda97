"""Sealed sessions (dshweb.core.fold.sealed): what one process folded, opened by another."""

from __future__ import annotations

import enum
import pickle
from pathlib import Path

import pytest
import zstandard

from dshweb.core.fold.checkpoint import seal, unseal
from dshweb.core.fold.gauge import context_gauge
from dshweb.core.fold.index import HomeIndex
from dshweb.core.fold.sealed import open_session, seal_session, sealed_tag
from tests.conftest import FIXTURE_HOMES

HOMES = sorted(p for p in FIXTURE_HOMES.iterdir() if (p / "sessions").is_dir())


@pytest.mark.parametrize("home", HOMES, ids=[h.name for h in HOMES])
def test_every_fixture_session_opens_equal_to_what_was_sealed(home: Path) -> None:
    index = HomeIndex(home, profile="sdk")
    index.refresh(None)
    assert index.trackers
    for folder in index.trackers:
        snapshot = index.snapshot(folder)
        gauge = context_gauge(snapshot)
        blob = seal_session(snapshot, gauge, key=b"k")
        assert open_session(blob, key=b"k") == (snapshot, gauge)


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("ran",))


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"dshweb-checkpoint 3 ...",
        seal(zstandard.compress(pickle.dumps(("a", "b"))), key=b"k", tag=sealed_tag()),
        seal(zstandard.compress(pickle.dumps(_Boom())), key=b"k", tag=sealed_tag()),
        seal(b"not zstd", key=b"k", tag=sealed_tag()),
        seal(b"x", key=b"other", tag=sealed_tag()),
    ],
    ids=["empty", "other-tag", "not-a-session", "code", "corrupt", "other-key"],
)
def test_what_this_code_did_not_seal_opens_as_none(
    blob: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    assert open_session(blob, key=b"k") is None
    assert capsys.readouterr().out == ""  # nothing ran


def test_a_session_whose_enums_were_pickled_by_name_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    """Some Python 3.11 releases (Debian 12's 3.11.2) pickle an enum member as
    ``getattr(cls, name)``: a collector on one seals what a worker on another opens."""
    index = HomeIndex(FIXTURE_HOMES / "auto-compact", profile="sdk")
    index.refresh(None)
    (folder, *_) = index.trackers
    snapshot = index.snapshot(folder)
    gauge = context_gauge(snapshot)

    def by_name(member: enum.Enum, protocol: object = None) -> tuple[object, tuple[object, str]]:
        return getattr, (type(member), member.name)

    with monkeypatch.context() as patched:
        patched.setattr(enum.Enum, "__reduce_ex__", by_name)
        blob = seal_session(snapshot, gauge, key=b"k")
        assert b"getattr" in zstandard.ZstdDecompressor().decompressobj().decompress(_body(blob))
    assert open_session(blob, key=b"k") == (snapshot, gauge)


def _body(blob: bytes) -> bytes:
    body = unseal(blob, key=b"k", tag=sealed_tag())
    assert isinstance(body, bytes)
    return body


class _GetattrOther:
    def __reduce__(self) -> tuple[object, tuple[object, str]]:
        return getattr, (HomeIndex, "refresh")


def test_a_forged_getattr_of_anything_but_an_enum_member_opens_as_none() -> None:
    body = zstandard.compress(pickle.dumps(_GetattrOther(), protocol=5))
    assert open_session(seal(body, key=b"k", tag=sealed_tag()), key=b"k") is None
